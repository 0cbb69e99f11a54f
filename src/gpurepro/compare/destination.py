"""Whose outputs a comparison's folder holds, so that one comparison never writes over another's.

Two comparisons whose runs share folder names (`lastmonth/h100` against `results/h100`, and
`colleague/h100` against `results/h100`) get one default folder, `results/compare/h100_vs_h100`. So the
folder keeps `compare.json` naming its pair by full path. Writing there again for the same pair replaces
the outputs (a rerun, as a careful user expects); for another pair it is refused while that pair's
outputs are there, naming both pairs and how to go on (--out). Outputs without a record (written before
it existed) belong to an unknown pair and are refused alike. A run compared with itself says nothing: it
is refused before anything is read.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from ..errors import GpureproError
from ..results import write_derived
from .folders import device_folder
from .pack import checksum_path, is_archive

RECORD = "compare.json"
# Every file a comparison of runs or of campaigns writes (outputs.NAMES, campaigns.NAMES), checked by
# a test, so that either kind's outputs guard the folder.
OUTPUTS = (
    "compare.md",
    "compare.csv",
    "compare.html",
    "compare.png",
    "campaign_compare.csv",
    "campaign_compare_gpus.csv",
    "campaign_compare.md",
)


def identity(path: Path | str) -> str:
    """A run as a comparison names it: its full path (a folder's device folder, where it names one)."""
    path = Path(path)
    if path.is_dir():
        # a campaign's folder, or a folder load_run will refuse with its own message, stays as named
        with contextlib.suppress(GpureproError):
            path = device_folder(path)
    return str(path.resolve())


def refuse_self(a: Path | str, b: Path | str) -> None:
    """Stop where A and B are one run: one folder (however named), one archive, or two copies of one
    archive (the same checksum)."""
    same = identity(a) == identity(b)
    if not same and is_archive(a) and is_archive(b):
        sums = [checksum_path(Path(p)) for p in (a, b)]
        same = all(s.is_file() for s in sums) and _digest(sums[0]) == _digest(sums[1]) != ""
    if same:
        raise GpureproError(
            f"A {a} and B {b} are one run ({identity(a)}): a run compared with itself says nothing. "
            "Name another run for B, e.g. a rerun's results folder or a packed reference run"
        )


def _digest(sums: Path) -> str:
    words = sums.read_text().split()
    return words[0] if words else ""


def pair(a: Path | str, b: Path | str) -> dict[str, str]:
    return {"a": identity(a), "b": identity(b)}


def claim(out: Path, a: Path | str, b: Path | str) -> None:
    """Make `out` this pair's folder: refuse a file, and a folder holding another comparison's outputs;
    then record the pair in it (compare.json), before any output is written."""
    if out.exists() and not out.is_dir():
        raise GpureproError(f"--out {out}: a file; name a folder for the comparison's outputs")
    mine = pair(a, b)
    held = [name for name in OUTPUTS if (out / name).exists()]
    if held:
        theirs = _recorded(out)
        if theirs != mine:
            whose = (
                f"the comparison of A {theirs.get('a')} with B {theirs.get('b')}"
                if theirs
                else f"a comparison that did not record its runs ({out / RECORD} absent)"
            )
            raise GpureproError(
                f"--out {out}: holds {', '.join(held)} of {whose}; comparing A {mine['a']} with B "
                f"{mine['b']} there would replace them. Name another folder with --out, or remove "
                "those files first"
            )
    write_derived(out / RECORD, json.dumps(mine, indent=2) + "\n", "--out")


def _recorded(out: Path) -> dict[str, str]:
    try:
        record = json.loads((out / RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
