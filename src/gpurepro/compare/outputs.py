"""Compare two results folders and write compare.{md,csv,html,png} into one folder: each file atomically
(a failed step leaves the last good one), in a folder that holds no other pair's comparison."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..plotting import save
from ..results import write_derived, write_table
from . import changes, destination, hostbound, match, plot, render, verdicts
from .pack import is_archive, unpack
from .runs import Run, load_run

NAMES = ("compare.md", "compare.csv", "compare.html", "compare.png")
# The summary's first line where the runs hold verdicts; its last line is always the counts of grades
VERDICTS = "verdicts: "


def write(
    a: Path | str, b: Path | str, out: Path | str, judge: verdicts.Judge | None = None
) -> tuple[list[Path], str]:
    """Compare run A with run B; the files written and the summary: the counts of grades, after a line
    on the verdicts' headlines where `judge` judges both runs again (the news goes first)."""
    destination.refuse_self(a, b)
    with tempfile.TemporaryDirectory(prefix="gpurepro-compare-") as scratch:
        a_run, b_run = (_load(path, Path(scratch, side)) for side, path in (("a", a), ("b", b)))
        return _write(a_run, b_run, a, b, Path(out), judge)


def _load(path: Path | str, scratch: Path) -> Run:
    """A results folder, or an archive of one (gpurepro pack), checksum verified, unpacked to scratch."""
    return load_run(unpack(Path(path), scratch) if is_archive(path) else path)


def _write(
    a_run: Run, b_run: Run, a: Path | str, b: Path | str, out: Path, judge: verdicts.Judge | None
) -> tuple[list[Path], str]:
    table = match.compare(a_run, b_run)
    changed = changes.changes(a_run, b_run)
    judged = (judge(a_run.path), judge(b_run.path)) if judge else (verdicts.NONE, verdicts.NONE)
    papers, words = verdicts.side_by_side(*judged), verdicts.changed_claims(*judged)
    destination.claim(out, a, b)
    paths = [out / name for name in NAMES]
    md, csv, page, png = paths
    write_derived(md, render.markdown(table, changed, str(a), str(b), papers, words), "--out")
    write_table(table, csv, "--out")
    write_derived(page, render.to_html(table, changed, str(a), str(b), papers, words), "--out")
    save(plot.plot(table, f"B / A: {b_run.name} ({b}) against {a_run.name} ({a})"), png)
    at_host_bound, changed_in_all = hostbound.changes_at_host_bound(table)
    notes = []
    if at_host_bound:
        notes.append(f"{at_host_bound} of the {changed_in_all} changes at host-bound points")
    headline = verdicts.summary(papers, words)
    summary = render.counts(table) + (f" ({'; '.join(notes)})" if notes else "")
    return paths, f"{VERDICTS}{headline}\n{summary}" if headline else summary
