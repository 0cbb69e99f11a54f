"""`gpurepro plot STUDY TABLE --out PNG`: a study's figure from its tidy table (and raw traces)."""

from __future__ import annotations

import argparse

import pandas as pd

from .. import runtimes
from ..hfta_study import plot as hfta_plot
from ..inference import plot as inference_plot
from ..plotting import save
from ..sgemm import plot as sgemm_plot
from ..training import plot as ddp_plot
from ..variability import plot as variability_plot

PLOTTERS = {
    "sgemm": lambda table, traces: sgemm_plot.plot(table, sgemm_plot.read_traces(traces)),
    "variability": lambda reps, _traces: variability_plot.plot(reps),
    "deit": lambda table, _traces: inference_plot.plot(table, "deit"),
    "bert": lambda table, _traces: inference_plot.plot(table, "bert"),
    "hfta": lambda table, _traces: hfta_plot.plot(table),
    "ddp": lambda table, _traces: ddp_plot.plot(table),
    "runtimes": lambda table, _traces: runtimes.plot(table),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plot", help="draw a study's figure from its table")
    parser.add_argument("study", choices=sorted(PLOTTERS))
    parser.add_argument("table", help="table written by `gpurepro aggregate` (variability: its reps table)")
    parser.add_argument("--traces", nargs="*", default=[], help="telemetry traces to draw (sgemm)")
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    save(PLOTTERS[args.study](pd.read_csv(args.table), args.traces), args.out)
    return 0
