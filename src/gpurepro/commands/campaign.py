"""`gpurepro campaign ...`: the variability study over a cluster. `node` measures every selected GPU of
this node at once; `tables` reads a campaign's raw files into its tables; `plot` draws its figure;
`compare` matches two campaigns' GPUs by UUID; `synthetic` writes a made campaign from a documented
model; `estimate` says what a campaign will cost before it is submitted."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..campaign import aggregate, layout, synthetic, tables, unrecorded
from ..campaign import plot as campaign_plot
from ..campaign.estimate import estimate
from ..campaign.node import NodeJob, measure_node
from ..compare import campaigns
from ..errors import GpureproError
from ..plotting import nothing_ran, save
from . import campaign_worker
from .options import non_negative_int, positive_float, positive_int, read_table, require_paths


def _indices(value: str) -> list[int]:
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value}' is not a list of GPU indices such as 0,1,2,3") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("campaign", help="the variability study over the nodes of a cluster")
    commands = parser.add_subparsers(dest="campaign_command", metavar="STEP", required=True)

    node = commands.add_parser("node", help="measure every selected GPU of this node at once")
    node.add_argument("n", type=positive_int, help="matrix size N")
    node.add_argument("reps", type=positive_int, help="timed products per run")
    node.add_argument("--runs", type=positive_int, default=1, help="runs, one after another (default 1)")
    node.add_argument(
        "--first-run", type=positive_int, default=1,
        help="the first run's number (default 1): a study that measures one run a job numbers them",
    )  # fmt: skip
    node.add_argument("--backend", default="torch", help="as `gpurepro sgemm --backend`")
    devices = node.add_mutually_exclusive_group(required=True)
    devices.add_argument("--gpus", type=_indices, help="NVML indices of the GPUs, e.g. 0,1,2,3")
    devices.add_argument("--stand-ins", type=positive_int, help="cpu profile: this many CPU processes")
    node.add_argument("--out-dir", type=Path, required=True, help="the attempt folder (raw files, node.json)")
    node.add_argument("--log-dir", type=Path, required=True, help="one log per device and run")
    node.add_argument("--sgemm-args", default="", help="further options of `gpurepro sgemm`, one string")
    node.add_argument(
        "--record-prefix", default="",
        help="names the records <prefix>node.json and <prefix>job.json, where several jobs share --out-dir",
    )  # fmt: skip
    node.add_argument(
        "--fail-if-unmeasured", action="store_true",
        help="exit with status 1 where the node is not measured (a study's job, which its workflow reruns); "
        "by default the job ends well and its record says why, so a campaign goes on with other nodes",
    )  # fmt: skip
    node.add_argument("--barrier-timeout-s", type=positive_float, default=600.0)
    node.add_argument(
        "--run-timeout-s", type=positive_float,
        help="a run's processes still running after this long are stopped and the node recorded failed "
        "(default: none; SLURM's time limit ends the job, and its SIGTERM is recorded)",
    )  # fmt: skip
    node.set_defaults(func=_node)

    gone = commands.add_parser("unavailable", help="record a node SLURM will not run a job on")
    gone.add_argument("node")
    gone.add_argument("--out-dir", type=Path, required=True, help="the node's attempt folder")
    gone.add_argument("--reason", required=True, help="SLURM's state and reason")
    gone.set_defaults(func=_unavailable)

    table = commands.add_parser(
        "tables",
        help="a campaign's raw files to its tables (recording first the tries that ended unrecorded)",
    )
    table.add_argument("raw", type=Path, help="the campaign's raw folder (<campaign>/raw)")
    table.add_argument("--campaign", required=True, help="the campaign's name, in every row")
    table.add_argument("--nodes", nargs="*", help="the nodes it asked for (default: every folder in raw)")
    table.add_argument("--out-dir", type=Path, required=True, help="where campaign_*.csv go")
    table.set_defaults(func=_tables)

    figure = commands.add_parser("plot", help="the campaign's figure from campaign_gpus.csv")
    figure.add_argument("table", type=Path)
    figure.add_argument("--out", type=Path, required=True)
    figure.set_defaults(func=_plot)

    compare = commands.add_parser("compare", help="two campaigns' GPUs matched by UUID")
    compare.add_argument("a", type=Path, help="campaign A's campaign_gpus.csv (the baseline)")
    compare.add_argument("b", type=Path, help="campaign B's campaign_gpus.csv")
    compare.add_argument("--out", type=Path, required=True, help="folder for campaign_compare*.csv")
    compare.set_defaults(func=_compare)

    made = commands.add_parser("synthetic", help="write a made campaign (gpurepro.campaign.synthetic)")
    made.add_argument("folder", type=Path, help="the campaign folder (raw/ goes inside)")
    for name, default in (("nodes", 16), ("gpus-per-node", 4), ("reps", 100), ("runs", 1)):
        made.add_argument(f"--{name}", type=positive_int, default=default)
    made.add_argument("--failed-nodes", type=non_negative_int, default=0)
    made.add_argument("--seed", type=int, default=0)
    made.set_defaults(func=_synthetic)

    cost = commands.add_parser("estimate", help="node-hours and GPU-hours a campaign will take")
    cost.add_argument("--nodes", type=positive_int, required=True)
    cost.add_argument("--gpus-per-node", type=positive_int, required=True)
    cost.add_argument("--runs", type=positive_int, required=True)
    cost.add_argument("--run-minutes", type=positive_float, required=True, help="one run, cool-down included")
    cost.add_argument("--parallel", type=positive_int, default=16, help="node jobs at once (profile's jobs)")
    cost.set_defaults(func=_estimate)


def _node(args: argparse.Namespace) -> int:
    job = NodeJob(
        args.n, args.reps, args.runs, args.backend, args.gpus or [], args.out_dir, args.log_dir,
        args.stand_ins or 0, shlex.split(args.sgemm_args), args.barrier_timeout_s, args.run_timeout_s,
        args.first_run, args.record_prefix,
    )  # fmt: skip
    record = measure_node(job, campaign_worker.measure)
    return 1 if args.fail_if_unmeasured and record["status"] != "measured" else 0


def _unavailable(args: argparse.Namespace) -> int:
    record = {"status": "unavailable", "reason": args.reason, "hostname": args.node, "gpus": []}
    path = layout.write_record(args.out_dir, record)
    print(f"node {args.node} unavailable ({args.reason}): recorded in {path}", file=sys.stderr)
    return 0


def _tables(args: argparse.Namespace) -> int:
    if args.nodes is not None and not args.nodes:
        raise GpureproError(
            "the campaign names no node: set campaign.nodes (SLURM hostlists, e.g. node[001-064]) or "
            "campaign.partition and campaign.node_count"
        )
    if not args.raw.is_dir():
        raise GpureproError(f"{args.raw} is not a campaign's raw folder: no node has been tried")
    for attempt in unrecorded.record(args.raw, args.nodes):
        print(
            f"node {attempt.node} attempt {attempt.number}: recorded failed: {attempt.reason}",
            file=sys.stderr,
        )
    found = aggregate.aggregate(args.raw, args.campaign, args.nodes)
    paths = aggregate.write(found, args.out_dir)
    print(f"wrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def _plot(args: argparse.Namespace) -> int:
    gpus = tables.wide_gpus(read_table("table", args.table))
    if gpus.empty:
        notes = [f"{args.table} has no measured GPU: see tables/campaign_nodes.csv for each node's reason"]
        save(nothing_ran("campaign: no node was measured", notes), args.out)
        return 0
    groups = list(gpus.groupby(["backend", "n"], sort=True))
    if len(groups) > 1:
        print(f"{len(groups)} backends/sizes: drawing the first, {groups[0][0]}", file=sys.stderr)
    save(campaign_plot.plot(groups[0][1]), args.out)
    return 0


def _compare(args: argparse.Namespace) -> int:
    require_paths("a", args.a)
    require_paths("b", args.b)
    paths, summary = campaigns.write(args.a, args.b, args.out)
    print(f"{summary}; wrote {', '.join(map(str, paths))}", file=sys.stderr)
    return 0


def _synthetic(args: argparse.Namespace) -> int:
    model = synthetic.Model(
        nodes=args.nodes, gpus_per_node=args.gpus_per_node, reps=args.reps, runs=args.runs,
        failed_nodes=args.failed_nodes, seed=args.seed,
    )  # fmt: skip
    truth = synthetic.write(model, args.folder)
    print(f"wrote {len(truth)} GPUs on {args.nodes} nodes under {args.folder}/raw", file=sys.stderr)
    return 0


def _estimate(args: argparse.Namespace) -> int:
    print(estimate(args.nodes, args.gpus_per_node, args.runs, args.run_minutes, args.parallel).describe())
    return 0
