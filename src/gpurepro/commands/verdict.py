"""`gpurepro verdict --profile P --tables T.csv... --md verdict.md --csv verdict.csv`: check the claims of
config/expected/ against a run's tables. A claim outside tolerance is a result, not an error: the command
succeeds unless --fail-on-outside is given."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from ..profiles import project_root
from ..verdict import render
from ..verdict.claims import load_claims
from ..verdict.evaluate import OUTSIDE, evaluate, gpu_names


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verdict",
        help="check published and reference claims (config/expected/) against a run's tables",
        description="Each claim ends within tolerance, outside tolerance, not applicable on this GPU (a "
        "claim for another profile or GPU variant) or not measured (its study or size did not run).",
    )
    parser.add_argument("--profile", required=True, help="the run's device profile, e.g. h200")
    parser.add_argument(
        "--claims", nargs="+", type=Path, default=[project_root() / "config" / "expected"],
        help="claim files, or folders of them (default: config/expected of this checkout)",
    )  # fmt: skip
    parser.add_argument(
        "--schema", type=Path, help="claims schema (default: workflow/schemas/claims.schema.yaml)"
    )
    parser.add_argument("--tables", nargs="*", type=Path, default=[], help="the run's tables/<name>.csv")
    parser.add_argument("--plots", nargs="*", type=Path, default=[], help="the run's plots/<name>.png")
    parser.add_argument("--md", type=Path, help="Markdown verdict (default: print it)")
    parser.add_argument("--csv", type=Path, help="verdict table")
    parser.add_argument("--html", type=Path, help="verdict page for the HTML report")
    parser.add_argument(
        "--fail-on-outside", action="store_true", help="exit with status 1 when a claim is outside tolerance"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    claims = load_claims(args.claims, args.schema)
    tables = {path.stem: pd.read_csv(path) for path in args.tables}
    link_from = args.md.parent if args.md else Path.cwd()
    plots = {path.stem: os.path.relpath(path, link_from) for path in args.plots}
    outcomes = evaluate(claims, args.profile, tables, plots)
    gpus = gpu_names(tables)
    page = render.markdown(outcomes, args.profile, gpus)
    outputs = {
        args.md: page,
        args.csv: render.frame(outcomes).to_csv(index=False),
        args.html: render.to_html(outcomes, args.profile, gpus),
    }
    for path, text in outputs.items():
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.md is None:
        print(page)
    print(f"verdict for profile {args.profile}: {render.summary(outcomes)}", file=sys.stderr)
    return 1 if args.fail_on_outside and any(o.status == OUTSIDE for o in outcomes) else 0
