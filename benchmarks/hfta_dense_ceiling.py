#!/usr/bin/env python3
"""How far is the fused array from the fastest it could be? Each B models fused (HFTA) against one dense
model of the same architecture trained on all B batches at once (batch B x 128): the same arithmetic per
step, with dense instead of grouped convolutions and B times fewer, larger kernels. No fusion of B
distinct models can beat that model's step by much, so its throughput bounds what the fused array can
reach, and (over one model trained alone at batch 128) what "fused over serial" can reach.

Every unit trains as `gpurepro hfta` trains it (gpurepro.hfta_study.training: the same models, batches,
optimizer, AMP and channels-last layout), in this one process, with the stock eager step and with the
step replayed as one CUDA graph. Printed per B: samples/s of the fused array and of the dense model, each
step, and the fused array's share of the dense model's throughput; then one model alone at batch 128
(stock serial's unit), and the dense model over it: the highest "fused over serial" any fused array
could show at that B.

    python benchmarks/hfta_dense_ceiling.py [--device 0] [--b-values 32 64] [--steps 30] [--warmup 10]

`--device cpu` runs the same code on the CPU (fp32, stock steps), as a smoke run:

    python benchmarks/hfta_dense_ceiling.py --device cpu --b-values 2 --steps 2 --warmup 1 --batch-size 4 \
        --image-size 32
"""

from __future__ import annotations

import argparse
import dataclasses

import torch

from gpurepro.hfta_study.training import (
    TrainSettings,
    UnitResult,
    prepare_process,
    release_cached_memory,
    train_fused,
    train_single,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="0", help="GPU index, or 'cpu' (default 0)")
    parser.add_argument("--b-values", type=int, nargs="+", default=[32, 64], help="B (default 32 64)")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per unit (default 30)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps per unit (default 10)")
    parser.add_argument("--batch-size", type=int, default=128, help="per model (default 128)")
    parser.add_argument("--image-size", type=int, default=64, help="ResNet-18 image side (default 64)")
    return parser.parse_args()


def throughput(result: UnitResult) -> float:
    return result.samples / (result.t_end_unix_s - result.t_start_unix_s)


def main() -> None:
    args = parse_args()
    on_gpu = args.device != "cpu"
    base = TrainSettings(
        workload="resnet18",
        batch_size=args.batch_size,
        precision="fp16" if on_gpu else "fp32",
        steps=args.steps,
        warmup=args.warmup,
        optimizer="sgd",
        lr=0.01,
        seed=0,
        device=f"cuda:{args.device}" if on_gpu else "cpu",
        image_size=args.image_size,
    )
    prepare_process(base)
    name = torch.cuda.get_device_name(int(args.device)) if on_gpu else "cpu"
    size = f"{args.image_size}x{args.image_size}"
    print(f"ResNet-18 {size}, batch {args.batch_size} per model, {base.precision}, {name}")
    steps = [False, True] if on_gpu else [False]
    alone = {
        graphs: throughput(train_single(dataclasses.replace(base, graphs=graphs), 0)) for graphs in steps
    }
    release_cached_memory(base.device)
    print(f"{'B':>4} {'step':>8} {'fused/s':>10} {'dense/s':>10} {'fused/dense':>11} {'dense/alone':>11}")
    for b in args.b_values:
        for graphs in steps:
            settings = dataclasses.replace(base, graphs=graphs)
            fused = throughput(train_fused(settings, b))
            release_cached_memory(base.device)
            dense = throughput(train_single(dataclasses.replace(settings, batch_size=b * args.batch_size), 0))
            release_cached_memory(base.device)
            step = "graphed" if graphs else "stock"
            ratios = f"{fused / dense:>11.3f} {dense / alone[False]:>11.2f}"
            print(f"{b:>4} {step:>8} {fused:>10.0f} {dense:>10.0f} {ratios}")
    for graphs, rate in alone.items():
        step = "graphed" if graphs else "stock"
        print(f"one model alone at batch {args.batch_size}, {step} step: {rate:.0f} samples/s")
    print("dense/alone: the dense model over one model alone with the stock step (stock serial's rate)")


if __name__ == "__main__":
    main()
