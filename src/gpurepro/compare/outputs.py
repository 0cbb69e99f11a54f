"""Compare two results folders and write compare.{md,csv,html,png} into one folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..plotting import save
from . import changes, hostbound, match, plot, render
from .pack import is_archive, unpack
from .runs import Run, load_run

NAMES = ("compare.md", "compare.csv", "compare.html", "compare.png")


def write(a: Path | str, b: Path | str, out: Path | str) -> tuple[list[Path], str]:
    """Compare run A with run B; the files written and the one-line summary of grades."""
    with tempfile.TemporaryDirectory(prefix="gpurepro-compare-") as scratch:
        a_run, b_run = (_load(path, Path(scratch, side)) for side, path in (("a", a), ("b", b)))
        return _write(a_run, b_run, a, b, Path(out))


def _load(path: Path | str, scratch: Path) -> Run:
    """A results folder, or an archive of one (gpurepro pack), checksum verified, unpacked to scratch."""
    return load_run(unpack(Path(path), scratch) if is_archive(path) else path)


def _write(a_run: Run, b_run: Run, a: Path | str, b: Path | str, out: Path) -> tuple[list[Path], str]:
    table = match.compare(a_run, b_run)
    changed = changes.changes(a_run, b_run)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in NAMES]
    md, csv, page, png = paths
    md.write_text(render.markdown(table, changed, str(a), str(b)))
    table.to_csv(csv, index=False)
    page.write_text(render.to_html(table, changed, str(a), str(b)))
    save(plot.plot(table, f"B / A: {b_run.name} ({b}) against {a_run.name} ({a})"), png)
    at_host_bound, changed_in_all = hostbound.changes_at_host_bound(table)
    notes = []
    if at_host_bound:
        notes.append(f"{at_host_bound} of the {changed_in_all} changes at host-bound points")
    return paths, render.counts(table) + (f" ({'; '.join(notes)})" if notes else "")
