#!/usr/bin/env python3
"""What a stock training step costs the host: one model against the fused array of B models, for each
image layout and convolution form of the fused array.

At small B a stock fused step waits on the host, and B processes under MPS each spend one model's host
time in parallel: the fused array can match them only if its step costs the host about what one
model's costs. Printed per layout (channels-last, NCHW) and form (auto, grouped, ...): one model's host
time of a stock step, its kernel launches a step and its samples/s; the same for the fused array at each
B, with its host time over one model's and its samples/s over one model's. Host time is taken as
hfta_dense_ceiling.py takes it (the device idle at the step's start, the host's waits for the device left
out, the median of --host-steps); launches are counted by torch's profiler over three steps; samples/s
over --min-timed-s of stock steps. Each line's figures come from one process, side by side.

    python benchmarks/hfta_host_time.py [--device 0] [--b-values 8] [--layouts channels_last nchw] \
        [--forms auto grouped]

`--device cpu` runs the same code on the CPU (fp32; no kernel launches), as a smoke run:

    python benchmarks/hfta_host_time.py --device cpu --b-values 2 --batch-size 2 --image-size 16 \
        --steps 2 --warmup 1 --min-timed-s 0 --host-steps 2 --layouts nchw --forms grouped
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
from pathlib import Path
from types import ModuleType

import torch

from gpurepro.hfta_study.training import (
    Unit,
    fused_unit,
    release_cached_memory,
    single_unit,
    train_fused,
    train_single,
)

LAYOUTS = {"channels_last": True, "nchw": False}
LAUNCHES = "cudaLaunch"  # cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel
PROFILED_STEPS = 3


def _dense_ceiling() -> ModuleType:
    """hfta_dense_ceiling.py as a module (benchmarks/ is no package): its host-time measurement."""
    path = Path(__file__).with_name("hfta_dense_ceiling.py")
    spec = importlib.util.spec_from_file_location("hfta_dense_ceiling", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="0", help="GPU index, or 'cpu' (default 0)")
    parser.add_argument("--b-values", type=int, nargs="+", default=[8], help="B (default 8)")
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--forms", nargs="+", default=["auto", "grouped"], help="conv forms (auto grouped)")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per unit at least (default 30)")
    parser.add_argument("--min-timed-s", type=float, default=3.0, help="timed seconds per unit (default 3)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps per unit (default 10)")
    parser.add_argument("--batch-size", type=int, default=128, help="per model (default 128)")
    parser.add_argument("--image-size", type=int, default=64, help="ResNet-18 image side (default 64)")
    parser.add_argument("--host-steps", type=int, default=15, help="stock steps timed on the host (15)")
    return parser.parse_args()


def launches_per_step(unit: Unit) -> float:
    """Kernel launches of one stock step (a mean over PROFILED_STEPS, after as many untimed ones)."""
    for i in range(PROFILED_STEPS):
        unit.trainer.step(*unit.batches[i % len(unit.batches)])
    if unit.device.type == "cuda":
        torch.cuda.synchronize(unit.device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        for i in range(PROFILED_STEPS):
            unit.trainer.step(*unit.batches[i % len(unit.batches)])
        if unit.device.type == "cuda":
            torch.cuda.synchronize(unit.device)
    return sum(e.count for e in profile.key_averages() if e.key.startswith(LAUNCHES)) / PROFILED_STEPS


def main() -> None:
    args = parse_args()
    ceiling = _dense_ceiling()
    base = ceiling.prepared_settings(args, "resnet18")
    for layout in args.layouts:
        for form in args.forms:
            settings = dataclasses.replace(base, channels_last=LAYOUTS[layout], conv_form=form)
            one = single_unit(settings, 0)
            one_ms, one_launches = ceiling.host_ms_per_step(one, args.host_steps), launches_per_step(one)
            del one
            one_rate = ceiling.throughput(train_single(settings, 0))
            release_cached_memory(settings.device)
            label = f"{layout}, form {form}"
            print(
                f"{label}: one model: host {one_ms:.1f} ms a step, {one_launches:.0f} launches, "
                f"{one_rate:.0f} samples/s",
                flush=True,
            )
            for b in args.b_values:
                fused = fused_unit(settings, b)
                fused_ms = ceiling.host_ms_per_step(fused, args.host_steps)
                fused_launches = launches_per_step(fused)
                del fused
                release_cached_memory(settings.device)
                rate = ceiling.throughput(train_fused(settings, b))
                release_cached_memory(settings.device)
                print(
                    f"{label}: fused B={b}: host {fused_ms:.1f} ms a step ({fused_ms / one_ms:.2f}x one "
                    f"model's), {fused_launches:.0f} launches, {rate:.0f} samples/s "
                    f"({rate / one_rate:.2f}x one model)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
