"""How a campaign's aggregation grows with the cluster: wall time and peak memory of reading a synthetic
campaign's raw files and making its tables (gpurepro.campaign.aggregate) and its figure, at 100, 1,000
and 10,000 GPUs (4 per node, --reps reps and --runs runs each; goal at 10,000 x 100 reps: under 60 s
and 2 GB). Each size is written once (gpurepro.campaign.synthetic, seeded) and then aggregated in a fresh
process, so its peak resident memory (ru_maxrss) is the aggregation's own, interpreter and imports
included; writing the raw files is not timed.

    python benchmarks/campaign_scale.py --folder /tmp/campaign-scale [--gpus 100 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from gpurepro.campaign import aggregate, synthetic, tables
from gpurepro.campaign import plot as campaign_plot
from gpurepro.plotting import save

GPUS_PER_NODE = 4


def measure(campaign: Path) -> dict[str, float]:
    """Aggregate one campaign here (the child process): seconds for the tables, for the figure, and
    the process's peak resident memory."""
    started = time.perf_counter()
    found = aggregate.aggregate(campaign / "raw", campaign.name)
    aggregate.write(found, campaign / "tables")
    tabled = time.perf_counter()
    for _, group in tables.wide_gpus(found["gpus"]).groupby(["backend", "n"]):
        save(campaign_plot.plot(group), campaign / "campaign.png")
    drawn = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"tables_s": tabled - started, "figure_s": drawn - tabled, "peak_mb": peak_kib / 1024,
            "gpus": float(len(found["gpus"].drop_duplicates(["node", "gpu"])))}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, required=True, help="where the synthetic campaigns go")
    parser.add_argument("--gpus", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return 0
    print(f"{'GPUs':>6} {'reps':>5} {'write s':>8} {'tables s':>9} {'figure s':>9} {'peak MB':>8}")
    for gpus in args.gpus:
        campaign = args.folder / f"scale{gpus}"
        started, written = time.perf_counter(), "kept"  # a campaign written by an earlier call is reused
        if not (campaign / synthetic.TRUTH).exists():
            model = synthetic.Model(nodes=gpus // GPUS_PER_NODE, gpus_per_node=GPUS_PER_NODE, reps=args.reps,
                                    runs=args.runs, seed=1)  # fmt: skip
            synthetic.write(model, campaign)
            written = f"{time.perf_counter() - started:.1f}"
        command = [sys.executable, __file__, "--folder", str(args.folder), "--child", str(campaign)]
        child = subprocess.run(command, capture_output=True, text=True, check=True)
        found = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"{int(found['gpus']):>6} {args.reps:>5} {written:>8} {found['tables_s']:>9.1f} "
              f"{found['figure_s']:>9.1f} {found['peak_mb']:>8.0f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
