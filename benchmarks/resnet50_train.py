#!/usr/bin/env python3
"""ResNet-50 v1.5 training throughput on synthetic data: images/s on one GPU and, with --gpus 2 (or more),
the DDP scaling efficiency, measured by `gpurepro train resnet50` itself (the code the ddp study runs),
one run per GPU count, each in its own processes. Prints a table next to NVIDIA's published figures.

    python benchmarks/resnet50_train.py                       # GPU 0, the profile's batch and AMP
    python benchmarks/resnet50_train.py --gpus 2              # 1 GPU, then GPUs 0,1 with DDP over NCCL
    python benchmarks/resnet50_train.py --processes 8 --iterations 30 --warmup 10   # the quick 1-GPU point
                                                              # in 8 fresh processes: their spread
    python benchmarks/resnet50_train.py --device cpu --gpus 2 --batch-size 4 --image-size 32 \\
        --iterations 3 --warmup 1                             # a smoke run: 1 and 2 gloo processes

Settings left out come from the device profile's `train` section (device=auto: the GPU's own profile).
NVIDIA DeepLearningExamples (NGC pytorch-21.03, real ImageNet through DALI): 2,470 images/s with AMP on
one A100 80GB, 16,621 on eight (6.72x); 1,200 on one V100 16GB.

With --processes N the 1-GPU point runs in N fresh processes one after another, as N runs of the ddp
study would: each process's images/s, and the geometric SD over them, the between-process spread that
config/between_process.yaml keeps for the ddp study (a figure from one process reads within it).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from gpurepro.process_stats import geometric_sd
from gpurepro.results import read_sidecar
from gpurepro.tables import pick
from gpurepro.training.summary import summarise

PUBLISHED = [
    ("A100 80GB, AMP, 1 GPU (NVIDIA)", 2470.0),
    ("A100 80GB, AMP, 8 GPUs (NVIDIA)", 16621.0),
    ("V100 16GB, AMP, 1 GPU (NVIDIA)", 1200.0),
]


def run_point(args: argparse.Namespace, count: int, out_dir: Path, process: int = 1) -> Path:
    """`gpurepro train resnet50` on `count` GPUs (or CPU processes); the raw table it wrote."""
    out = out_dir / f"resnet50_{count}gpu_process{process}.csv"
    devices = ["--gpus", "cpu", "--nproc", str(count)] if args.device == "cpu" else [
        "--gpus", ",".join(map(str, range(count)))
    ]  # fmt: skip
    command = [sys.executable, "-m", "gpurepro", "train", "resnet50", *devices, "--device-check", "warn"]
    for option in (
        "profile",
        "batch_size",
        "precision",
        "image_size",
        "iterations",
        "warmup",
        "log_interval",
    ):
        value = getattr(args, option)
        if value is not None:
            command += [f"--{option.replace('_', '-')}", str(value)]
    if args.device == "cpu" and args.profile is None:
        command += ["--profile", "cpu"]
    print(f"running {count} (process {process}): {' '.join(command[2:])}", file=sys.stderr, flush=True)
    result = subprocess.run([*command, "--out", str(out)], text=True, stderr=subprocess.PIPE)
    if result.returncode != 0:
        sys.exit(f"{count} GPU(s) failed:\n{result.stderr[-3000:]}")
    if "failed" in read_sidecar(out):
        print(f"{count} GPU(s): point failed: {read_sidecar(out)['failed']}", file=sys.stderr)
    return out


def table(paths: list[Path]) -> pd.DataFrame:
    tidy = summarise([str(p) for p in paths])
    wanted = {
        ("throughput", "total"): "images/s",
        ("throughput", "per_gpu"): "images/s per GPU",
        ("speedup_vs_1_gpu", "value"): "speedup",
        ("scaling_efficiency", "value"): "efficiency %",
        ("step_time", "median"): "step ms (median)",
    }
    tidy = tidy[[(m, s) in wanted for m, s in zip(tidy["metric"], tidy["statistic"], strict=True)]]
    tidy = tidy.assign(
        column=[wanted[(m, s)] for m, s in zip(tidy["metric"], tidy["statistic"], strict=True)]
    )
    wide = tidy.pivot_table(index="gpus", columns="column", values="value", aggfunc="first")
    return wide[[c for c in wanted.values() if c in wide.columns]]


def process_spread(paths: list[Path]) -> None:
    """Each process's images/s on one GPU, then their median, range and geometric SD."""
    rates = [float(pick(summarise([str(path)]), "throughput", "total")["value"].iloc[0]) for path in paths]
    for number, rate in enumerate(rates, start=1):
        print(f"  process {number}: {rate:,.1f} images/s")
    print(
        f"  {len(rates)} processes: median {statistics.median(rates):,.1f}, {min(rates):,.1f} to "
        f"{max(rates):,.1f} images/s, geometric SD {geometric_sd(rates):.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--gpus", type=int, default=1, help="largest GPU count (1, then this many)")
    parser.add_argument("--profile", help="device profile (default: the GPU's own; cpu with --device cpu)")
    parser.add_argument("--batch-size", type=int, help="per GPU (default: the profile's)")
    parser.add_argument(
        "--precision", choices=["fp32", "tf32", "fp16", "bf16"], help="default: the profile's"
    )
    parser.add_argument("--image-size", type=int, help="synthetic images' side (default: the profile's)")
    parser.add_argument("--iterations", type=int, help="timed iterations (default: the profile's)")
    parser.add_argument("--warmup", type=int, help="untimed iterations first (default: the profile's)")
    parser.add_argument("--log-interval", type=int, help="iterations per timed row (default 10)")
    parser.add_argument("--out-dir", type=Path, help="keep the raw tables here (default: a temporary folder)")
    parser.add_argument(
        "--processes", type=int, default=1, help="fresh processes for the 1-GPU point (default 1)"
    )
    args = parser.parse_args()
    if args.processes < 1:
        parser.error(f"--processes must be at least 1, not {args.processes}")
    counts = [1] if args.gpus <= 1 else [1, args.gpus]
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.out_dir or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        singles = [run_point(args, 1, out_dir, process) for process in range(1, args.processes + 1)]
        paths = [singles[0], *(run_point(args, count, out_dir) for count in counts[1:])]
        first = pd.read_csv(paths[0]).iloc[0]
        per = "process" if args.device == "cpu" else "GPU"
        print(
            f"\nResNet-50 v1.5 training, {first['data']}, {first['precision']}, "
            f"batch {first['batch_per_gpu']} per {per}, channels-last {bool(first['channels_last'])}, "
            f"profile {first['profile']}, warm-up excluded:"
        )
        print(table(paths).to_string(float_format=lambda v: f"{v:,.2f}"))
        if len(singles) > 1:
            print(f"\nThe 1-GPU point in {len(singles)} fresh processes, one after another:")
            process_spread(singles)
    print("\nFor context:")
    for label, value in PUBLISHED:
        print(f"  {label}: {value:,.0f} images/s")


if __name__ == "__main__":
    main()
