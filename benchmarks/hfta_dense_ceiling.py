#!/usr/bin/env python3
"""How far is the fused array from the fastest it could be, and what does it cost the host? Each B models
fused (HFTA) against one dense model of the same architecture trained on all B batches at once (batch
B x 128): the same arithmetic per step, with dense instead of grouped convolutions and B times fewer,
larger kernels. No fusion of B distinct models can beat that model's step by much, so its throughput
bounds what the fused array can reach, and (over one model trained alone at batch 128) what "fused over
serial" can reach.

Every unit trains as `gpurepro hfta` trains it (gpurepro.hfta_study.training: the same models, batches,
optimizer, AMP and channels-last layout, timed for at least --min-timed-s after warm-up), in this one
process, with each step kind: stock (eager), graphed (one CUDA graph a step) and compiled (torch.compile,
graphed too on a GPU). Printed per B and step kind: samples/s of the fused array and of the dense
model, and the fused array's share of the dense model's throughput; per step kind, one model alone at
batch 128 (stock serial's unit); then the host time of one stock step (the device's queue empty at its
start, the host's waits for the device, as a GradScaler's inf check, left out; median of --host-steps):
one model's and the fused array's at each B, and their ratio.

    python benchmarks/hfta_dense_ceiling.py [--device 0] [--b-values 8 32 64] [--min-timed-s 5]

`--device cpu` runs the same code on the CPU (fp32; stock and compiled steps), as a smoke run:

    python benchmarks/hfta_dense_ceiling.py --device cpu --b-values 2 --steps 2 --warmup 1 --batch-size 4 \
        --image-size 32 --min-timed-s 0 --host-steps 2
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import torch

from gpurepro.hfta import CONV_FORMS
from gpurepro.hfta_study.training import (
    TrainSettings,
    Unit,
    UnitResult,
    fused_unit,
    prepare_process,
    release_cached_memory,
    single_unit,
    train_fused,
    train_single,
)

HOST_WAITS = ("aten::_local_scalar_dense",)  # where a step's host waits for the device (.item())


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="0", help="GPU index, or 'cpu' (default 0)")
    parser.add_argument("--b-values", type=int, nargs="+", default=[8, 32, 64], help="B (default 8 32 64)")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per unit at least (default 30)")
    parser.add_argument("--min-timed-s", type=float, default=5.0, help="timed seconds per unit (default 5)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps per unit (default 10)")
    parser.add_argument("--batch-size", type=int, default=128, help="per model (default 128)")
    parser.add_argument("--image-size", type=int, default=64, help="ResNet-18 image side (default 64)")
    parser.add_argument("--workload", default="resnet18", choices=["resnet18", "mlp"])
    parser.add_argument("--kinds", nargs="+", default=None, help="step kinds (default: all that run here)")
    parser.add_argument("--host-steps", type=int, default=20, help="stock steps timed on the host (20)")
    parser.add_argument("--conv-form", default="auto", choices=CONV_FORMS, help="fused convolutions (auto)")
    return parser.parse_args()


def throughput(result: UnitResult) -> float:
    return result.samples / (result.t_end_unix_s - result.t_start_unix_s)


def host_ms_per_step(unit: Unit, steps: int) -> float:
    """Median host milliseconds of one training step, each started with the device idle (so no launch
    waits for a full queue), less the time the host waited for the device inside it."""
    times = []
    for i in range(steps + 2):  # two untimed: lazy state, cuDNN's and the conv forms' timing
        batch = unit.batches[i % len(unit.batches)]
        if unit.device.type == "cuda":
            torch.cuda.synchronize(unit.device)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            start = time.perf_counter()
            unit.trainer.step(*batch)
            elapsed = time.perf_counter() - start
        waited = sum(e.cpu_time_total for e in profile.key_averages() if e.key in HOST_WAITS) / 1e6
        if i >= 2:
            times.append((elapsed - waited) * 1e3)
    return statistics.median(times)


def prepared_settings(args: argparse.Namespace, workload: str) -> TrainSettings:
    """The units' settings from the arguments (fp16 AMP on a GPU, fp32 on the CPU; SGD as the study
    trains), with this process prepared and what is measured printed."""
    on_gpu = args.device != "cpu"
    base = TrainSettings(
        workload=workload,
        batch_size=args.batch_size,
        precision="fp16" if on_gpu else "fp32",
        steps=args.steps,
        warmup=args.warmup,
        optimizer="sgd",
        lr=0.01,
        seed=0,
        device=f"cuda:{args.device}" if on_gpu else "cpu",
        image_size=args.image_size,
        min_timed_s=args.min_timed_s,
        conv_form=getattr(args, "conv_form", "auto"),  # hfta_host_time.py sets its forms itself
    )
    prepare_process(base)
    name = torch.cuda.get_device_name(int(args.device)) if on_gpu else "cpu"
    shape = f"{args.image_size}x{args.image_size}" if workload == "resnet18" else "784"
    print(f"{workload} {shape}, batch {args.batch_size} per model, {base.precision}, {name}", end=", ")
    print(f"conv form {base.conv_form}")
    return base


def main() -> None:
    args = parse_args()
    on_gpu = args.device != "cpu"
    base = prepared_settings(args, args.workload)
    kinds = {
        "stock": dataclasses.replace(base),
        "graphed": dataclasses.replace(base, graphs=True),
        "compiled": dataclasses.replace(base, compiled=True, graphs=on_gpu),
    }
    wanted = args.kinds or list(kinds)
    kinds = {k: v for k, v in kinds.items() if (on_gpu or not v.graphs) and k in wanted}
    alone = {}
    for kind, settings in kinds.items():
        alone[kind] = throughput(train_single(settings, 0))
        release_cached_memory(base.device)
    print(f"{'B':>4} {'step':>8} {'fused/s':>10} {'dense/s':>10} {'fused/dense':>11} {'dense/alone':>11}")
    for b in args.b_values:
        for kind, settings in kinds.items():
            fused = throughput(train_fused(settings, b))
            release_cached_memory(base.device)
            dense = throughput(train_single(dataclasses.replace(settings, batch_size=b * args.batch_size), 0))
            release_cached_memory(base.device)
            ratios = f"{fused / dense:>11.3f} {dense / alone['stock']:>11.2f}"
            print(f"{b:>4} {kind:>8} {fused:>10.0f} {dense:>10.0f} {ratios}", flush=True)
    for kind, rate in alone.items():
        print(f"one model alone at batch {args.batch_size}, {kind} step: {rate:.0f} samples/s")
    print("dense/alone: the dense model over one model alone with the stock step (stock serial's rate)")
    one = host_ms_per_step(single_unit(base, 0), args.host_steps)
    release_cached_memory(base.device)
    print(f"host time of a stock step: one model {one:.2f} ms")
    for b in args.b_values:
        fused = host_ms_per_step(fused_unit(base, b), args.host_steps)
        release_cached_memory(base.device)
        print(f"host time of a stock step: fused B={b} {fused:.2f} ms, {fused / one:.2f}x one model's")


if __name__ == "__main__":
    main()
