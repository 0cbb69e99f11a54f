"""`gpurepro compare A B [--out DIR]`: two runs' results folders side by side, metric by metric, and
what changed between them (GPU, driver, packages, clocks, container, config, commit); or two campaigns'
folders, GPU by GPU matched by UUID (compare/campaigns.py)."""

from __future__ import annotations

import argparse
import sys

from ..campaign import layout
from ..compare import campaigns
from ..compare.folders import default_out
from ..compare.outputs import write
from ..verdict import rejudge
from .options import require_paths


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two runs (results/<device> folders): ratio B/A of every metric, graded",
        description="Every metric both runs measured, matched on its point's key columns, as the ratio "
        "B/A of its median over the processes that measured it, with a 95% interval across those "
        "processes (with one process a side, the project's measured between-process spread, "
        "config/between_process.yaml), graded faster/slower (higher/lower) where the interval excludes 1, "
        "same within noise where it lies inside its kind's equivalence margin, else unresolved at this "
        "spread, or not comparable with the reason; dispersions as differences in their own units; counts "
        "as counts; then the "
        "provenance fields that differ; the page opens with the two runs' verdicts side by side (each "
        "paper's headline, every claim whose word changed). Writes compare.md, compare.csv, compare.html "
        "and compare.png, each atomically, and compare.json naming the pair: a folder holding another "
        "pair's comparison is refused, as is a run compared with itself. Two "
        "campaigns' folders instead: their GPUs matched by UUID, the rank correlation of their standing "
        "in their clusters with an interval, and which GPUs changed standing (campaign_compare.*).",
    )
    parser.add_argument(
        "a", help="run A, the baseline: a results folder of one device, e.g. results/h100, or a campaign's "
        "folder, e.g. results/v100/campaign/2026-11",
    )  # fmt: skip
    parser.add_argument("b", help="run B, compared against A: e.g. results-rerun/h100 (or another campaign)")
    parser.add_argument(
        "--out",
        help="folder for the outputs (default: results/compare/<A>_vs_<B>); refused where it holds another "
        "pair's comparison",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_paths("a", args.a, kind="file or folder")  # a folder, or an archive of gpurepro pack
    require_paths("b", args.b, kind="file or folder")
    out = args.out or default_out(args.a, args.b)
    # two campaigns' folders: their GPUs matched by UUID (one that is not a campaign's is refused, naming it)
    if layout.is_campaign(args.a) or layout.is_campaign(args.b):
        paths, summary = campaigns.write_folders(args.a, args.b, out)
    else:
        paths, summary = write(args.a, args.b, out, rejudge.judged)
    *verdicts, counts = summary.splitlines()
    for line in verdicts:  # the verdicts' headlines first: a changed one is the news
        print(f"{args.a} -> {args.b}: {line}", file=sys.stderr)
    print(f"compare {args.a} -> {args.b}: {counts}; wrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0
