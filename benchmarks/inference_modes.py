#!/usr/bin/env python3
"""How much of batch-1 inference latency is launch overhead, and is energy per inference repeatable?

1. Repeatability: one point (default DeiT-B, batch 1, fp16 autocast, cudagraph) measured twice by
   `gpurepro infer`, each run the full protocol of the pipeline (cool-down, idle baseline before the model
   is built, timed blocks, an NVML energy window of --energy-window-s), one after the other. Prints energy
   per inference gross and above idle for both runs and their difference in percent. These run first, in
   their own processes, so no CUDA context of this script sits on the GPU during their idle baselines.
2. Modes side by side in this one process, on one model and input: eager, torch.compile and CUDA graph
   replay, each timed with torch.utils.benchmark's blocked_autorange (median, IQR, blocks), its output
   checked against eager, and its speedup over eager. FasterTransformer reported 1.53 ms for ViT-B/16 at
   batch 1 in FP16 on an A100; the original study 4.37 ms for DeiT-B batch 1 AMP eager on an A100.

    python benchmarks/inference_modes.py [--model deit-b] [--precision fp16] [--min-run-time 3]
                                         [--energy-window-s 10] [--repeat-mode cudagraph] [--out-dir DIR]

`--gpu cpu` is a smoke run of the same code on the CPU (fp32, eager and compile, no energy counter).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from gpurepro import nvml
from gpurepro.inference.measure import describe_measurement, max_abs_diff, synchronizer, time_blocked
from gpurepro.inference.models import VIT_MODELS, build_vit
from gpurepro.inference.modes import MODES, build_runner
from gpurepro.point_failure import PointFailed


def repeat_point(args: argparse.Namespace, out_dir: Path) -> list[dict]:
    """Run the point twice through the CLI, as the pipeline does; return each run's energy record."""
    runs = []
    for run in (1, 2):
        out = out_dir / f"{args.model}_b{args.batch_size}_{args.precision}_{args.repeat_mode}_run{run}.csv"
        command = [
            sys.executable, "-m", "gpurepro", "infer", "vit", "-m", args.model, "-b", str(args.batch_size),
            "--precision", args.precision, "--mode", args.repeat_mode, "--gpu", args.gpu, "--run", str(run),
            "--min-run-time", str(args.min_run_time), "--energy-window-s", str(args.energy_window_s),
            "--idle-seconds", str(args.idle_seconds), "--cooldown-max-wait-s", str(args.cooldown_max_wait_s),
            "--device-check", "warn", "--out", str(out),
            "--trace-out", str(out.with_suffix(".telemetry.csv")),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"run {run} failed:\n{result.stderr[-3000:]}")
        sidecar = json.loads(out.with_name(out.stem + ".provenance.json").read_text())
        if "failed" in sidecar:
            sys.exit(f"run {run}: point failed: {sidecar['failed']}")
        energy = sidecar["measurement"]["energy"].get(args.gpu)
        if energy is None:
            sys.exit(f"run {run}: {sidecar['measurement']['energy_note']}")
        idle = sidecar["measurement"]["idle"][args.gpu]["power_w"]
        runs.append({**energy, "idle_power_w": idle, "median_ms": float(pd.read_csv(out)["ms"].median())})
    return runs


def compare_modes(args: argparse.Namespace) -> list[dict]:
    device = torch.device("cpu" if args.gpu == "cpu" else f"cuda:{args.gpu}")
    model = build_vit(args.model, args.batch_size, device)
    synchronize = synchronizer(device)
    reference = build_runner(model.forward, model.example, "eager", args.precision)().clone()
    results = []
    for mode in args.modes:
        started = time.perf_counter()
        try:
            run = build_runner(model.forward, model.example, mode, args.precision, warmup=args.warmup)
        except PointFailed as failure:
            results.append({"mode": mode, "failed": str(failure)})
            continue
        synchronize()
        ready_s = time.perf_counter() - started
        difference = max_abs_diff(run(), reference)
        blocks, measurement = time_blocked(run, synchronize, args.min_run_time)
        print(f"{mode}: {describe_measurement(measurement)}", file=sys.stderr)
        results.append(
            {
                "mode": mode,
                "median_ms": measurement.median * 1e3,
                "iqr_ms": measurement.iqr * 1e3,
                "blocks": len(blocks),
                "runs_per_block": measurement.number_per_run,
                "ready_s": ready_s,
                "max_abs_diff": difference,
            }
        )
    return results


def report_runs(runs: list[dict], point: str) -> None:
    print(f"\nenergy per inference, {point}, two runs of the full protocol:")
    print(
        f"{'run':>4} {'median_ms':>9} {'window_s':>8} {'infer':>7} {'avg_W':>7} {'idle_W':>7} "
        f"{'gross_J':>9} {'above_J':>9} reliable"
    )
    for i, r in enumerate(runs, 1):
        print(
            f"{i:>4} {r['median_ms']:>9.3f} {r['duration_s']:>8.2f} {r['operations']:>7d} "
            f"{r['avg_power_w']:>7.1f} {r['idle_power_w']:>7.1f} "
            f"{r['energy_per_op_j']:>9.5f} {r['energy_per_op_above_idle_j']:>9.5f} "
            f"{r['reliable']}"
        )
    for key, name in (("energy_per_op_j", "gross"), ("energy_per_op_above_idle_j", "above idle")):
        a, b = runs[0][key], runs[1][key]
        print(f"difference, {name}: {abs(a - b) / ((a + b) / 2) * 100:.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", choices=list(VIT_MODELS), default="deit-b")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--precision", choices=["fp32", "tf32", "fp16", "bf16"], default="fp16")
    parser.add_argument("--min-run-time", type=float, default=3.0)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--energy-window-s", type=float, default=10.0)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--cooldown-max-wait-s", type=float, default=30.0)
    parser.add_argument("--repeat-mode", choices=list(MODES), default="cudagraph")
    parser.add_argument("--out-dir", type=Path, help="where the two runs' raw files go (default: a temp dir)")
    parser.add_argument("--gpu", default="0", help="GPU index (default 0), or cpu for a smoke run")
    args = parser.parse_args()

    if args.gpu == "cpu":
        name, args.modes, args.precision, args.repeat_mode = "cpu", ["eager", "compile"], "fp32", "eager"
    else:
        available, reason = nvml.available()
        if not available or not torch.cuda.is_available():
            sys.exit(f"this benchmark needs an NVIDIA GPU with CUDA: {reason or 'torch has no CUDA'}")
        with nvml.session():
            name = f"GPU {args.gpu}: {nvml.gpu_info(int(args.gpu)).name}"
        args.modes = list(MODES)
    out_dir = args.out_dir or Path(tempfile.mkdtemp(prefix="inference_modes_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    point = f"{args.model} batch {args.batch_size} {args.precision}"

    runs = repeat_point(args, out_dir) if args.gpu != "cpu" else []  # first: no CUDA context of ours yet
    modes = compare_modes(args)

    print(f"\n{name}; torch {torch.__version__}; {point}")
    print(f"{'mode':>10} {'median_ms':>10} {'iqr_ms':>8} {'blocks':>7} {'runs/blk':>8} {'speedup':>8} "
          f"{'ready_s':>8} {'max|diff|':>10}")  # fmt: skip
    eager = next((m["median_ms"] for m in modes if m["mode"] == "eager" and "median_ms" in m), None)
    for m in modes:
        if "failed" in m:
            print(f"{m['mode']:>10} failed: {m['failed']}")
            continue
        speedup = eager / m["median_ms"] if eager else float("nan")
        print(
            f"{m['mode']:>10} {m['median_ms']:>10.3f} {m['iqr_ms']:>8.3f} {m['blocks']:>7d} "
            f"{m['runs_per_block']:>8d} {speedup:>7.2f}x {m['ready_s']:>8.1f} {m['max_abs_diff']:>10.3g}"
        )
    if not runs:
        print("energy: not measured on the CPU smoke run")
        return
    report_runs(runs, f"{point} {args.repeat_mode}")
    print(f"raw files: {out_dir}")


if __name__ == "__main__":
    main()
