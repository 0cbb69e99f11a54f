#!/usr/bin/env python3
"""Is horizontal fusion worth it here? ResNet-18 on 64x64 images at batch 128 per model under AMP (fp16),
trained serially, as B concurrent processes, under MPS (where nvidia-cuda-mps-control exists) and fused
(HFTA), for every B in one run, each point through `gpurepro hfta` in its own process as the pipeline runs
it; then the tables of `gpurepro aggregate hfta`. Prints the throughput curve (samples/s, and over serial
at the same B) and, at the fused array's best B, its ratio to serial and to concurrent (and MPS).
Target on an H100/H200: fused >= 5x serial and >= 2x concurrent.

    python benchmarks/hfta_speedup.py [--device 0] [--b-values 1,2,4,8,16,32] [--steps 100]
                                      [--precision fp16] [--out-dir DIR]

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
    parser.add_argument("--b-values", type=_b_values, default=[1, 2, 4, 8, 16, 32], help="comma-separated B")
    parser.add_argument("--steps", type=int, default=100, help="timed steps per model (default 100)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps per model (default 20)")
    parser.add_argument("--batch-size", type=int, default=128, help="per model (default 128)")
    parser.add_argument("--image-size", type=int, default=64, help="image side (default 64)")
    parser.add_argument("--precision", help="default: fp16 (AMP) on a GPU, fp32 on the CPU")
    parser.add_argument("--profile", help="device profile (default: detected)")
    parser.add_argument(
        "--cooldown-max-wait-s", type=float, default=30.0,
        help="longest wait for the GPU to cool towards idle before each point (default 30)",
    )  # fmt: skip
    parser.add_argument(
        "--out-dir", type=Path, help="keep the raw files and tables here (default: temporary)"
    )
    return parser.parse_args()


def run_point(args: argparse.Namespace, mode: str, b: int, precision: str, raw: Path) -> Path:
    out = raw / f"{mode}_{precision}_b{b}.csv"
    command = [
        sys.executable, "-m", "gpurepro", "hfta", "--workload", "resnet18", "--mode", mode, "-B", str(b),
        "--precision", precision, "--batch-size", str(args.batch_size), "--image-size", str(args.image_size),
        "--steps", str(args.steps), "--warmup", str(args.warmup), "--gpu", args.device,
        "--device-check", "warn", "--idle-seconds", "1",
        "--cooldown-max-wait-s", str(args.cooldown_max_wait_s),
        "--out", str(out), "--trace-out", str(out.with_suffix(".telemetry.csv")),
    ]  # fmt: skip
    if args.profile:
        command += ["--profile", args.profile]
    result = subprocess.run(command, capture_output=True, text=True)
    summary = [line for line in result.stderr.splitlines() if "samples/s" in line or "point " in line]
    print(f"  {mode:10s} {precision} B={b:<3d} {summary[-1] if summary else ''}", flush=True)
    if result.returncode != 0:
        sys.exit(f"gpurepro hfta failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return out


def main() -> None:
    args = parse_args()
    precision = args.precision or ("fp32" if args.device == "cpu" else "fp16")
    modes = ["serial", "concurrent", "hfta"]
    if args.device != "cpu":
        if shutil.which(MPS_CONTROL):
            modes.insert(2, "mps")
        else:
            print(f"{MPS_CONTROL} not found: the mps baseline is skipped")
    with tempfile.TemporaryDirectory(prefix="gpurepro-hfta-bench-") as tmp:
        raw = args.out_dir or Path(tmp)
        raw.mkdir(parents=True, exist_ok=True)
        size = f"{args.image_size}x{args.image_size}"
        print(
            f"ResNet-18 {size}, batch {args.batch_size} per model, {precision}, {args.steps} timed steps "
            f"after {args.warmup} warm-up, device {args.device}"
        )
        paths = [str(run_point(args, mode, b, precision, raw)) for b in args.b_values for mode in modes]
        table = summarise(paths)
        summary = speedups(table)
        table.to_csv(raw / "hfta.csv", index=False)
        summary.to_csv(raw / "hfta_speedup.csv", index=False)
    throughput = table[table["metric"] == "throughput"]
    curve = throughput.pivot_table(index="b", columns="mode", values="value", aggfunc="median")
    curve = curve[[m for m in ["serial", "concurrent", "mps", "hfta"] if m in curve.columns]]
    status = throughput.pivot_table(index="b", columns="mode", values="status", aggfunc="first")
    print("\nthroughput (samples/s; blank: not measured)")
    print(curve.round(1).to_string())
    statuses = status.stack()
    not_ok = statuses[statuses != "ok"]
    if len(not_ok):
        print("not measured: " + ", ".join(f"B={b} {mode}: {s}" for (b, mode), s in not_ok.items()))
    print("\nthroughput / serial at the same B")
    print((curve.div(curve["serial"], axis=0)).round(2).to_string())
    rows = summary[(summary["metric"] == "speedup") & (summary["statistic"] == "at_best_b")]
    if rows.empty:
        print("\nno fused point ran: no speedup")
        return
    best_b = int(rows["b"].iloc[0])
    print(f"\nat the fused array's best B={best_b}:")
    for _, row in rows.iterrows():
        print(f"  hfta / {row['baseline']:10s} = {row['value']:.2f}x")
    peak = summary[(summary["metric"] == "speedup") & (summary["statistic"] == "max")]
    for _, row in peak.iterrows():
        print(
            f"  peak hfta / peak {row['baseline']:10s} = {row['value']:.2f}x "
            f"(its best B={int(row['baseline_b'])})"
        )
    if args.out_dir:
        print(f"\nraw files and tables in {args.out_dir}")


if __name__ == "__main__":
    pd.set_option("display.width", 160)
    main()
