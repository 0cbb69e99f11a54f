"""`gpurepro pack RESULTS --out run.tar.gz`: a run's tables, raw files with provenance, and verdict in
one archive with a .sha256 beside it, to send to a reviewer or compare later (`gpurepro compare`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..compare.pack import checksum_path, pack
from .options import require_paths


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pack",
        help="pack a run (tables, raw files, provenance, verdict) into one archive with its checksum",
    )
    parser.add_argument("results", type=Path, help="a results folder of one device, e.g. results/h100")
    parser.add_argument(
        "--out", type=Path, required=True, help="the archive to write, e.g. run.tar.gz; never replaced"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_paths("results", args.results, kind="folder")
    files = pack(args.results, args.out)
    print(
        f"packed {len(files)} files of {args.results} into {args.out} ({checksum_path(args.out)})",
        file=sys.stderr,
    )
    return 0
