"""`gpurepro more-processes --study hfta --tables T.csv... --out round1.json`: after a study's rounds, the
points its inconclusive claims read that get one more process each (the workflow's checkpoint reads the
file and plans those jobs); an empty list ends the rounds."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import sequential
from ..hardware import load_hardware
from ..looks import Look, family_of, levels
from ..more_processes import Budget, claim_points, next_round, read_plan
from ..more_processes.points import selections
from ..profiles import project_root
from ..results import ensure_absent, write_derived
from ..rounds import CLAIM_PROCESSES
from ..verdict.claims import REPRODUCTION
from ..verdict.evaluate import evaluate
from ..verdict.loading import load_claims
from ..verdict.statuses import UNMEASURED
from .options import positive_int, read_table, require_paths


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "more-processes",
        help="the points an inconclusive claim reads that get one more process (one round)",
        description="Judge the claims of one study on its tables as they stand. Every point a judged "
        "claim reads that stands on fewer than 3 processes, and for each claim still inconclusive its "
        "noisier side, get one more process, up to --per-point processes a point and --extra extra "
        "processes in all. Each round is a look at the claims: their intervals are built at the level "
        "that spending --alpha over the looks (--spending) allows this look, which the plan records.",
    )
    parser.add_argument("--study", required=True, help="the claims' study (hfta, inference)")
    parser.add_argument("--tables", nargs="+", type=Path, required=True, help="the study's tables/<name>.csv")
    root = project_root() / "config"
    parser.add_argument("--claims", nargs="+", type=Path, default=[root / "expected"])
    parser.add_argument("--hardware", type=Path, default=root / "hardware")
    parser.add_argument("--gpus", type=int, help="GPUs the run had (as for `gpurepro verdict`)")
    parser.add_argument("--per-point", type=positive_int, required=True, help="most processes of a point")
    parser.add_argument("--extra", type=int, help="most extra processes in all rounds (default: no cap)")
    parser.add_argument("--earlier", nargs="*", type=Path, default=[], help="the plans of the earlier rounds")
    parser.add_argument(
        "--rounds", type=int, default=0,
        help="most rounds of more processes: the looks are one more (default 0: one look, at 1 - alpha)",
    )  # fmt: skip
    parser.add_argument(
        "--spending", choices=sequential.SPENDING, default="pocock",
        help="how the error is spent over the repeated looks (gpurepro/sequential.py)",
    )  # fmt: skip
    parser.add_argument("--alpha", type=float, default=0.05, help="the error over every look (default 0.05)")
    parser.add_argument("--out", type=Path, required=True, help="this round's plan (JSON)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_paths("--tables", *args.tables)
    require_paths("--claims", *args.claims, kind="file or folder")
    require_paths("--hardware", args.hardware, kind="folder")
    require_paths("--earlier", *args.earlier)
    ensure_absent(args.out)
    hardware = load_hardware(args.hardware)
    tables = {path.stem: read_table("--tables", path) for path in args.tables}
    # the study's claims these tables answer (one family's: DeiT's tables do not judge BERT's claims)
    claims = [
        claim
        for claim in load_claims(args.claims, None, hardware)
        if claim.study == args.study and all(s.table in tables for s in selections(claim))
    ]
    spent = sum(len(read_plan(path)) for path in args.earlier)
    budget = Budget(args.per_point, args.extra, spent)
    # this round's look at the claims: its intervals at the level the error spent over the looks allows
    schedule = levels(args.spending, args.alpha, CLAIM_PROCESSES, args.per_point, args.rounds)
    look = Look(len(args.earlier) + 1, schedule, args.spending, args.alpha)
    families = {family_of(name) for name in tables} - {None}
    outcomes = evaluate(claims, tables, hardware, args.gpus, looks={str(f): look for f in families})
    # the papers' claims first, then the project's own regression checks: a budget spent stops the latter.
    # A claim shown but not counted (claim.not_counted) is still settled: the verdict prints its reading.
    waiting = sorted((o for o in outcomes if o.inconclusive), key=lambda o: o.claim.purpose != REPRODUCTION)
    read = {o.claim.id: claim_points(o.claim, tables) for o in outcomes if o.grade != UNMEASURED}
    # an ordering's processes go to the points of the steps it could not resolve, not to a noisy point
    # whose step already resolved
    unsettled = [
        claim_points(o.claim, tables, o.unsettled) if o.unsettled else read[o.claim.id] for o in waiting
    ]
    points = next_round(unsettled, budget, read.values())
    for outcome in waiting:
        print(f"inconclusive: {outcome.claim.id}: {outcome.detail}", file=sys.stderr)
    plan = {
        "round": len(args.earlier) + 1,
        "inconclusive": [o.claim.id for o in waiting],
        "spent_before": spent,
        **look.record(),
        "points": [{"study": p.study, "wildcards": p.next_run()} for p in points],
    }
    write_derived(args.out, json.dumps(plan, indent=1) + "\n")
    print(
        f"round {plan['round']}: {len(waiting)} inconclusive claim(s), {len(points)} more process(es) "
        f"({spent} run in earlier rounds; budget {budget.per_point} a point, "
        f"{'no cap' if budget.extra is None else budget.extra} in all); {look.describe()}",
        file=sys.stderr,
    )
    return 0
