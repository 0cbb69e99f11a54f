"""The verdict a finished run names: its file and each paper's headline, read back from the verdict.md the
run wrote (its "Per paper" table, one row per paper with the headline in bold), never judged again here,
so what the run prints is what the file says.
"""

from __future__ import annotations

import re
from pathlib import Path

PER_PAPER = "## Per paper"
# a table cell boundary: a pipe that the verdict's writer did not escape (it writes "|" in text as "\|")
CELL_BOUNDARY = re.compile(r"(?<!\\)\|")


def _cells(row: str) -> list[str]:
    return [cell.strip().replace("\\|", "|") for cell in CELL_BOUNDARY.split(row.strip())[1:-1]]


def headlines(markdown: str) -> list[tuple[str, str]]:
    """(paper, headline) for each row of the Per paper table, in the file's order; none without one. The
    columns are found by their header (paper, verdict), so a column added to the table moves nothing."""
    lines = markdown.splitlines()
    if PER_PAPER not in lines:
        return []
    rows = []
    for line in lines[lines.index(PER_PAPER) + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append(_cells(line))
    if len(rows) < 2 or not {"paper", "verdict"} <= set(rows[0]):
        return []
    paper, verdict = rows[0].index("paper"), rows[0].index("verdict")
    # the header row and the |---| row come first
    return [(row[paper], row[verdict].strip("*")) for row in rows[2:] if len(row) > max(paper, verdict)]


def announcement(verdict_md: Path) -> str:
    """What a finished run prints last: the verdict file, then one line per paper."""
    try:
        papers = headlines(verdict_md.read_text())
    except OSError as err:
        return f"gpurepro: the verdict is {verdict_md} (it could not be read back: {err.strerror})"
    lines = [f"gpurepro: the verdict is {verdict_md} (verdict.html beside it); per paper:"]
    lines += [f"  {paper}: {headline}" for paper, headline in papers] or ["  (no paper's claims judged)"]
    return "\n".join(lines)
