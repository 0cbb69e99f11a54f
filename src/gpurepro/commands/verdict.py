"""`gpurepro verdict --profile P --tables T.csv... --md verdict.md --csv verdict.csv`: check the claims of
config/expected/ against a run's tables, on whatever GPU the run measured; with `--campaign FOLDER`
instead, the claims about a cluster's GPUs against a campaign's tables (verdict/campaign.py). A claim
outside tolerance is a result, not an error: the command succeeds unless --fail-on-outside is given."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..campaign import aggregate
from ..errors import GpureproError
from ..hardware import load_hardware
from ..profiles import project_root
from ..results import write_derived
from ..verdict import campaign as on_campaign
from ..verdict import render
from ..verdict.here import Here
from ..verdict.loading import load_claims
from ..verdict.measured import how_measured
from ..verdict.points import load_points
from ..verdict.rejudge import judge_tables
from ..verdict.statuses import NOT_HELD
from .options import read_table, require_paths


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verdict",
        help="check published and reference claims (config/expected/) against a run's tables",
        description="Relative claims are judged on any GPU by their direction and magnitude; absolute claims "
        "exactly on the paper's GPU and scaled through reference rates (config/hardware/) on others; a "
        "claim this run could not measure is 'not measured', with the reason. The page opens with one "
        "line per paper; the project's own regression checks are listed apart.",
    )
    parser.add_argument("--profile", required=True, help="the run's device profile, e.g. h200")
    root = project_root() / "config"
    parser.add_argument(
        "--claims", nargs="+", type=Path, default=[root / "expected"],
        help="claim files, or folders of them (default: config/expected of this checkout)",
    )  # fmt: skip
    parser.add_argument(
        "--hardware", type=Path, default=root / "hardware",
        help="the hardware table: a folder of <gpu>.yaml (default: config/hardware of this checkout)",
    )  # fmt: skip
    parser.add_argument(
        "--schema", type=Path, help="claims schema (default: workflow/schemas/claims.schema.yaml)"
    )
    parser.add_argument(
        "--points", type=Path, default=root / "points.yaml",
        help="what tells each table's points apart (default: config/points.yaml of this checkout)",
    )  # fmt: skip
    parser.add_argument(
        "--results", type=Path,
        help="the device's results folder: the provenance sidecars of its raw files say how it was measured",
    )  # fmt: skip
    parser.add_argument(
        "--tables", nargs="*", type=Path, default=[],
        help="the run's tables/<name>.csv (reference.csv holds the rates absolute claims are scaled by)",
    )  # fmt: skip
    parser.add_argument("--plots", nargs="*", type=Path, default=[], help="the run's plots/<name>.png")
    parser.add_argument(
        "--campaign", type=Path,
        help="a campaign's folder (results/<device>/campaign/<name>): judge the claims about a cluster's "
        "GPUs from its tables/campaign_*.csv instead of a run's tables (its plots/ are linked)",
    )  # fmt: skip
    parser.add_argument(
        "--gpus", type=int, help="GPUs the run had (claims that need more are not measured); default: "
        "the GPUs its tables name",
    )  # fmt: skip
    parser.add_argument(
        "--table-rules", nargs="*", default=[], metavar="TABLE=RULE",
        help="the rule that writes each table, named in the hint of a claim whose table or metric is absent",
    )  # fmt: skip
    parser.add_argument("--md", type=Path, help="Markdown verdict (default: print it)")
    parser.add_argument("--csv", type=Path, help="verdict table")
    parser.add_argument("--html", type=Path, help="verdict page for the HTML report")
    parser.add_argument("--rst", type=Path, help="the per-paper summary for the report's landing page")
    parser.add_argument(
        "--fail-on-outside", action="store_true", help="exit with status 1 when a claim does not hold"
    )
    parser.set_defaults(func=run)


def _table_rules(pairs: list[str]) -> dict[str, str]:
    rules = {}
    for pair in pairs:
        table, sep, rule = pair.partition("=")
        if not sep or not table or not rule:
            raise GpureproError(
                f"--table-rules: '{pair}' is not TABLE=RULE (e.g. inference_deit=inference_deit)"
            )
        rules[table] = rule
    return rules


def _require_inputs(args: argparse.Namespace) -> None:
    require_paths("--claims", *args.claims, kind="file or folder")
    require_paths("--hardware", args.hardware, kind="folder")
    require_paths("--schema", args.schema)
    require_paths("--points", args.points)
    require_paths("--results", args.results, kind="folder")
    require_paths("--plots", *args.plots)
    require_paths("--campaign", args.campaign, kind="folder")


def run(args: argparse.Namespace) -> int:
    _require_inputs(args)
    hardware = load_hardware(args.hardware)
    claims = load_claims(args.claims, args.schema, hardware, load_points(args.points))
    link_from = args.md.parent if args.md else Path.cwd()

    def linked(paths: list[Path]) -> dict[str, str]:
        return {path.stem: os.path.relpath(path, link_from) for path in paths}

    if args.campaign is None:
        title = args.profile
        tables = {path.stem: read_table("--tables", path) for path in args.tables}
        plots = linked(args.plots)
        measured = how_measured(args.results)
        rules = _table_rules(args.table_rules)
        outcomes = judge_tables(claims, tables, hardware, args.results, args.gpus, plots, rules)
    else:
        if args.tables or args.gpus is not None:
            raise GpureproError(
                "--campaign reads the campaign's own tables and counts its GPUs: give --tables and --gpus, "
                "or --campaign, not both"
            )
        tables = aggregate.read_tables(args.campaign)
        title = f"{args.profile}, campaign {on_campaign.name_of(args.campaign, tables)}"
        plots = linked(args.plots or sorted((args.campaign / "plots").glob("*.png")))
        outcomes = on_campaign.judge(claims, tables, hardware, plots)
        measured = on_campaign.provenance(args.campaign)
    here = Here.of(tables, args.gpus)
    drawn = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    page = render.markdown(outcomes, title, here, measured, drawn)
    outputs = {
        args.md: page,
        args.csv: render.frame(outcomes).to_csv(index=False),
        args.html: render.to_html(outcomes, title, here, measured, drawn),
        args.rst: render.landing_page(outcomes, title, here, measured, drawn),
    }
    for path, text in outputs.items():
        if path is not None:
            write_derived(path, text)
    if args.md is None:
        print(page)
    print(f"verdict for profile {title}: {render.summary(outcomes)}", file=sys.stderr)
    return 1 if args.fail_on_outside and any(o.grade == NOT_HELD for o in outcomes) else 0
