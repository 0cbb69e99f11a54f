"""`gpurepro aggregate STUDY RAW... --out TABLE`: raw files to one tidy long table (raw files untouched)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..sgemm import summary as sgemm_summary

SUMMARISERS = {"sgemm": sgemm_summary.summarise}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("aggregate", help="summarise raw results into a tidy table")
    parser.add_argument("study", choices=sorted(SUMMARISERS))
    parser.add_argument("raw", nargs="+", help="raw result files (each with its .provenance.json)")
    parser.add_argument("--out", required=True, help="CSV table to write")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    table = SUMMARISERS[args.study](args.raw)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    return 0
