#!/usr/bin/env python3
"""Is horizontal fusion worth it here? A workload (default ResNet-18 on 64x64 images) at batch 128 per
model under AMP (fp16), trained serially, as B concurrent processes, under MPS (where
nvidia-cuda-mps-control exists) and fused (HFTA), for every B in one run, each point through `gpurepro
hfta` in its own process as the pipeline runs it; then the tables of `gpurepro aggregate hfta`. Prints the
throughput curve (samples/s, and over serial at the same B) and, at the fused array's best B, its ratio to
each baseline.

`--graphs both` runs every point twice, with the stock eager step and with the whole step replayed as one
CUDA graph (`gpurepro hfta --graphs on`), and prints both curves and the fused array, each step, against
the stock and the graphed baselines at every B and at its best B.

    python benchmarks/hfta_speedup.py [--device 0] [--workload resnet18|transformer|mlp]
        [--b-values 1,2,4,8,16,32] [--steps 100] [--precision fp16] [--graphs off|on|both] [--out-dir DIR]

`--device cpu` runs the same code on the CPU (fp32, no MPS), e.g. as a smoke run:

    python benchmarks/hfta_speedup.py --device cpu --b-values 1,2 --steps 3 --warmup 1 --batch-size 4 \
        --image-size 32
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from gpurepro.hfta_study import MODES, WORKLOADS
from gpurepro.hfta_study.mps import MPS_CONTROL
from gpurepro.hfta_study.summary import speedups, summarise


def _b_values(text: str) -> list[int]:
    values = sorted({int(v) for v in text.split(",") if v.strip()})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"B values must be positive integers, got {text!r}")
    return values


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="0", help="GPU index, or 'cpu' (default 0)")
    parser.add_argument("--workload", choices=WORKLOADS, default="resnet18", help="default resnet18")
    parser.add_argument("--b-values", type=_b_values, default=[1, 2, 4, 8, 16, 32], help="comma-separated B")
    parser.add_argument("--steps", type=int, default=100, help="timed steps per model (default 100)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps per model (default 20)")
    parser.add_argument("--batch-size", type=int, default=128, help="per model (default 128)")
    parser.add_argument("--image-size", type=int, default=64, help="resnet18 image side (default 64)")
    parser.add_argument("--seq-len", type=int, default=128, help="transformer tokens (default 128)")
    parser.add_argument("--precision", help="default: fp16 (AMP) on a GPU, fp32 on the CPU")
    parser.add_argument("--profile", help="device profile (default: detected)")
    parser.add_argument(
        "--cooldown-max-wait-s", type=float, default=30.0,
        help="longest wait for the GPU to cool towards idle before each point (default 30)",
    )  # fmt: skip
    parser.add_argument(
        "--modes", type=lambda text: text.split(","), default=["serial", "concurrent", "mps", "hfta"],
        help="comma-separated modes to run (default serial,concurrent,mps,hfta; mps only where present)",
    )  # fmt: skip
    parser.add_argument(
        "--graphs", choices=["off", "on", "both"], default="off",
        help="the stock eager step, each step as one CUDA graph, or both side by side (default off)",
    )  # fmt: skip
    parser.add_argument(
        "--out-dir", type=Path, help="keep the raw files and tables here (default: temporary)"
    )
    return parser.parse_args()


def run_point(args: argparse.Namespace, mode: str, b: int, precision: str, graphs: str, raw: Path) -> Path:
    out = raw / f"{args.workload}_{mode}_{precision}_b{b}_graphs-{graphs}.csv"
    command = [
        sys.executable, "-m", "gpurepro", "hfta", "--workload", args.workload, "--mode", mode, "-B", str(b),
        "--precision", precision, "--batch-size", str(args.batch_size), "--image-size", str(args.image_size),
        "--seq-len", str(args.seq_len),
        "--steps", str(args.steps), "--warmup", str(args.warmup), "--gpu", args.device,
        "--device-check", "warn", "--idle-seconds", "1", "--graphs", graphs,
        "--cooldown-max-wait-s", str(args.cooldown_max_wait_s),
        "--out", str(out), "--trace-out", str(out.with_suffix(".telemetry.csv")),
    ]  # fmt: skip
    if args.profile:
        command += ["--profile", args.profile]
    result = subprocess.run(command, capture_output=True, text=True)
    summary = [line for line in result.stderr.splitlines() if "samples/s" in line or "point " in line]
    line = summary[-1] if summary else ""
    print(f"  {mode:10s} {precision} B={b:<3d} graphs {graphs:3s} {line}", flush=True)
    if result.returncode != 0:
        sys.exit(f"gpurepro hfta failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return out


def main() -> None:
    args = parse_args()
    precision = args.precision or ("fp32" if args.device == "cpu" else "fp16")
    modes = [m for m in args.modes if m != "mps" or args.device != "cpu"]
    if "mps" in modes and not shutil.which(MPS_CONTROL):
        print(f"{MPS_CONTROL} not found: the mps baseline is skipped")
        modes.remove("mps")
    with tempfile.TemporaryDirectory(prefix="gpurepro-hfta-bench-") as tmp:
        raw = args.out_dir or Path(tmp)
        raw.mkdir(parents=True, exist_ok=True)
        shape = f"{args.image_size}x{args.image_size}" if args.workload == "resnet18" else ""
        shape = f"{args.seq_len} tokens" if args.workload == "transformer" else shape
        print(
            f"{args.workload} {shape}, batch {args.batch_size} per model, {precision}, {args.steps} timed "
            f"steps after {args.warmup} warm-up, device {args.device}"
        )
        graph_settings = ["off", "on"] if args.graphs == "both" else [args.graphs]
        paths = [
            str(run_point(args, mode, b, precision, graphs, raw))
            for graphs in graph_settings
            for b in args.b_values
            for mode in modes
        ]
        table = summarise(paths)
        summary = speedups(table)
        table.to_csv(raw / "hfta.csv", index=False)
        summary.to_csv(raw / "hfta_speedup.csv", index=False)
        for step, rows in table.groupby("step", sort=False):
            print(f"\n== {step} steps ({'torch eager' if step == 'stock' else 'each step one CUDA graph'})")
            print_curve(rows)
        print_speedups(summary)
        if args.out_dir:
            print(f"\nraw files and tables in {args.out_dir}")


def print_curve(table: pd.DataFrame) -> None:
    """The throughput curve of one step (samples/s, and over serial at the same B)."""
    throughput = table[table["metric"] == "throughput"]
    curve = throughput.pivot_table(index="b", columns="mode", values="value", aggfunc="median")
    curve = curve[[m for m in MODES if m in curve.columns]]
    status = throughput.pivot_table(index="b", columns="mode", values="status", aggfunc="first")
    print("throughput (samples/s; blank: not measured)")
    print(curve.round(1).to_string())
    statuses = status.stack()
    not_ok = statuses[statuses != "ok"]
    if len(not_ok):
        print("not measured: " + ", ".join(f"B={b} {mode}: {s}" for (b, mode), s in not_ok.items()))
    if "serial" in curve:
        print("throughput / serial at the same B")
        print((curve.div(curve["serial"], axis=0)).round(2).to_string())


def print_speedups(summary: pd.DataFrame) -> None:
    """The fused array (each step) over each baseline (each step), at its best B and peak over peak."""
    rows = summary[summary["metric"] == "speedup"]
    if rows.empty:
        print("no fused point ran: no speedup")
        return
    print("\nthe fused array over each baseline (steps: fused / baseline)")
    for _, row in rows.iterrows():
        which = f"hfta {row['step']:7s} / {row['baseline']:10s} {row['baseline_step']:7s}"
        b, baseline_b = int(row["b"]), int(row["baseline_b"])
        where = (
            f"at B={b}, the fused best"
            if row["statistic"] == "at_best_b"
            else f"peaks, B={b} / B={baseline_b}"
        )
        print(f"  {which} {where}: {row['value']:.2f}x")


if __name__ == "__main__":
    pd.set_option("display.width", 160)
    main()
