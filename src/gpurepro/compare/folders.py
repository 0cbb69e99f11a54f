"""Where a comparison's outputs go, and run A's tables for the workflow (no plotting imports: the
Snakefile reads this while it parses)."""

from __future__ import annotations

from pathlib import Path

from ..errors import GpureproError


def default_out(a: Path | str, b: Path | str, root: Path | str = "results") -> Path:
    """results/compare/<A>_vs_<B>: the folders' names (e.g. h100_vs_h200)."""
    return Path(root) / "compare" / f"{run_name(a)}_vs_{run_name(b)}"


def run_name(path: Path | str) -> str:
    """A run's name: its folder's, or its archive's without .tar.gz (gpurepro pack)."""
    return Path(path).resolve().name.removesuffix(".tar.gz")


def baseline_tables(compare_with: str) -> list[str]:
    """Run A's tables for the workflow's compare rule, or an error saying how to name run A."""
    if not compare_with:
        raise GpureproError(
            "rule compare: config compare_with is empty. Name the results folder of the run to compare "
            "this one with, e.g. snakemake compare --cores 1 --config compare_with=results-lastmonth/h100"
        )
    tables = sorted(Path(compare_with, "tables").glob("*.csv"))
    if not tables:
        raise GpureproError(
            f"rule compare: config compare_with={compare_with}: no tables/*.csv there; expected the results "
            "folder of one device, e.g. results-lastmonth/h100"
        )
    return [str(path) for path in tables]
