"""`gpurepro plot STUDY TABLE --out PNG`: a study's figure from its tidy table (and raw traces)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from .. import plot_claims, runtimes
from ..hfta_study import plot as hfta_plot
from ..inference import plot as inference_plot
from ..plotting import save
from ..sgemm import plot as sgemm_plot
from ..training import plot as ddp_plot
from ..variability import plot as variability_plot
from ..variability import summary as variability_summary
from .options import read_table, require_paths

PLOTTERS = {
    "sgemm": lambda table, args: sgemm_plot.plot(
        table, sgemm_plot.read_traces(args.traces), plot_claims.sgemm_marks(table)
    ),
    "variability": lambda reps, args: _variability(reps, _beside(args.table, "variability_summary")),
    "deit": lambda table, args: inference_plot.plot(
        table, "deit", processes=_beside(args.table, "{stem}_processes")
    ),
    "bert": lambda table, args: inference_plot.plot(
        table, "bert", processes=_beside(args.table, "{stem}_processes")
    ),
    "hfta": lambda table, args: hfta_plot.plot(
        table, processes=_beside(args.table, "hfta_processes"), reference=_optional(args.reference)
    ),
    "ddp": lambda table, args: ddp_plot.plot(table, _optional(args.reference)),
    "runtimes": lambda table, _args: runtimes.plot(table),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plot", help="draw a study's figure from its table")
    parser.add_argument("study", choices=sorted(PLOTTERS))
    parser.add_argument("table", help="table written by `gpurepro aggregate` (variability: its reps table)")
    parser.add_argument("--traces", nargs="*", default=[], help="telemetry traces to draw (sgemm)")
    parser.add_argument(
        "--reference", help="the run's tables/reference.csv (ddp, hfta: the rates the verdict scales a "
        "published figure by, where it takes a measured rate)",
    )  # fmt: skip
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.set_defaults(func=run)


def _optional(path: str | None) -> pd.DataFrame | None:
    return read_table("--reference", path) if path else None


def _variability(reps: pd.DataFrame, summary: pd.DataFrame | None) -> Figure:
    """The variability figure, its spreads' claims judged on the summary (made from the reps where the
    aggregation's is not beside them)."""
    summary = variability_summary.summarise(reps) if summary is None else summary
    return variability_plot.plot(reps, summary, plot_claims.variability_marks(reps, summary))


def _beside(table: str, name: str) -> pd.DataFrame | None:
    """The table the same aggregation wrote beside the one given (tables/<name>.csv, `name` formatted
    with the given table's stem: an inference family's across-process table, the variability summary),
    where it exists: a figure judges its claims on the tables the verdict reads."""
    path = Path(table).with_name(f"{name.format(stem=Path(table).stem)}.csv")
    return read_table(name, str(path)) if path.is_file() else None


def run(args: argparse.Namespace) -> int:
    require_paths("--traces", *args.traces)
    save(PLOTTERS[args.study](read_table("table", args.table), args), args.out)
    return 0
