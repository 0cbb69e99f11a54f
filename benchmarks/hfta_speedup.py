#!/usr/bin/env python3
"""Is horizontal fusion worth it here? ResNet-18 on 64x64 images at batch 128 per model under AMP (fp16),
trained serially, as B concurrent processes, under MPS (where nvidia-cuda-mps-control exists) and fused
(HFTA), for every B in one run, each point through `gpurepro hfta` in its own process as the pipeline runs
it; then the tables of `gpurepro aggregate hfta`. Prints the throughput curve (samples/s, and over serial
at the same B) and, at the fused array's best B, its ratio to serial and to concurrent (and MPS).
Target on an H100/H200: fused >= 5x serial and >= 2x concurrent.

`--graphs both` runs every point twice, with the stock eager step and with the whole step replayed as one
CUDA graph (`gpurepro hfta --graphs on`), and prints both curves and the graphed fused array against the
stock and the graphed baselines at every B.

    python benchmarks/hfta_speedup.py [--device 0] [--b-values 1,2,4,8,16,32] [--steps 100]
                                      [--precision fp16] [--graphs off|on|both] [--out-dir DIR]

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
    out = raw / f"{mode}_{precision}_b{b}_graphs-{graphs}.csv"
    command = [
        sys.executable, "-m", "gpurepro", "hfta", "--workload", "resnet18", "--mode", mode, "-B", str(b),
        "--precision", precision, "--batch-size", str(args.batch_size), "--image-size", str(args.image_size),
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
        size = f"{args.image_size}x{args.image_size}"
        print(
            f"ResNet-18 {size}, batch {args.batch_size} per model, {precision}, {args.steps} timed steps "
            f"after {args.warmup} warm-up, device {args.device}"
        )
        graph_settings = ["off", "on"] if args.graphs == "both" else [args.graphs]
        curves = {}
        for graphs in graph_settings:
            paths = [
                str(run_point(args, mode, b, precision, graphs, raw)) for b in args.b_values for mode in modes
            ]
            table = summarise(paths)
            summary = speedups(table)
            table.to_csv(raw / f"hfta_graphs-{graphs}.csv", index=False)
            summary.to_csv(raw / f"hfta_speedup_graphs-{graphs}.csv", index=False)
            print(f"\n== {'stock eager steps' if graphs == 'off' else 'each step one CUDA graph'}")
            curves[graphs] = report(table, summary)
        if len(curves) == 2:
            fused = curves["on"]["hfta"]
            print("\nthe graphed fused array over each baseline, stock and graphed, at the same B")
            ratios = {f"{mode} {kind}": fused / curves[graphs][mode] for mode in modes if mode != "hfta"
                      for kind, graphs in [("stock", "off"), ("graphed", "on")]}  # fmt: skip
            ratios["hfta stock"] = fused / curves["off"]["hfta"]
            print(pd.DataFrame(ratios).round(2).to_string())
        if args.out_dir:
            print(f"\nraw files and tables in {args.out_dir}")


def report(table: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Print a curve (samples/s and over serial at the same B) and the speedups; return the curve."""
    throughput = table[table["metric"] == "throughput"]
    curve = throughput.pivot_table(index="b", columns="mode", values="value", aggfunc="median")
    curve = curve[[m for m in ["serial", "concurrent", "mps", "hfta"] if m in curve.columns]]
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
    rows = summary[(summary["metric"] == "speedup") & (summary["statistic"] == "at_best_b")]
    if rows.empty:
        print("no fused point ran: no speedup")
        return curve
    best_b = int(rows["b"].iloc[0])
    print(f"at the fused array's best B={best_b}:")
    for _, row in rows.iterrows():
        print(f"  hfta / {row['baseline']:10s} = {row['value']:.2f}x")
    peak = summary[(summary["metric"] == "speedup") & (summary["statistic"] == "max")]
    for _, row in peak.iterrows():
        print(
            f"  peak hfta / peak {row['baseline']:10s} = {row['value']:.2f}x "
            f"(its best B={int(row['baseline_b'])})"
        )
    return curve


if __name__ == "__main__":
    pd.set_option("display.width", 160)
    main()
