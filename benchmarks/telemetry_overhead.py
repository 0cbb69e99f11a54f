#!/usr/bin/env python3
"""How much does the telemetry sampler slow the work it measures, in its own process and as a thread?

Three workloads, all in this one process:
- sgemm: FP32 matrix products (4096^3 on a GPU), bound by the GPU; the host waits.
- deit-b: eager DeiT-B inference at batch 1 under fp16 autocast (about 7 ms on an H100), bound by the
  host: Python launches one kernel per op, and a sampler thread competes with it for the interpreter.
- resnet18: one training step of the HFTA study's ResNet-18 (64x64 images, 200 classes) at batch 32,
  SGD with momentum under AMP (fp16 autocast and a gradient scaler), also bound by the host.

For each workload, sampler (process, thread) and rate, blocks of back-to-back operations are timed with
the sampler off and on in pairs, each pair in a random order, so that drift in clocks, temperature or the
host's load falls on both alike. Printed per row: the median block time off and on, their ratio, the
median of the per-pair ratios with its 95% bootstrap interval, and the rate the sampler achieved during
the timed blocks (median and lowest) with the samples it dropped. A row `none` times pairs of blocks with
no sampler at all: its interval is the noise floor, what an overhead must exceed to be seen at all on
this host and workload. Before the table: the idle baseline and each sampler's start and stop cost.

    python benchmarks/telemetry_overhead.py [--device 0] [--workloads sgemm deit-b resnet18]
        [--rates 50 200] [--samplers process thread] [--pairs 30] [--block-s 0.25]

`--device cpu` runs the same code on the CPU, e.g. as a smoke run with small sizes:

    python benchmarks/telemetry_overhead.py --device cpu --sgemm-n 256 --vit deit-t --resnet-batch 4 \
        --resnet-image-size 32 --pairs 3 --block-s 0.3 --idle-s 1
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from gpurepro import nvml
from gpurepro.hfta.workloads import workload as hfta_workload
from gpurepro.hfta_study.training import _Trainer
from gpurepro.inference.measure import synchronizer
from gpurepro.inference.models import VIT_MODELS, build_vit
from gpurepro.inference.modes import build_runner
from gpurepro.sgemm.torch_mm import TorchSgemm
from gpurepro.telemetry import SAMPLERS, TelemetrySource, measure_idle, open_sampler, open_source

WORKLOADS = ("sgemm", "deit-b", "resnet18")
NO_SAMPLER = "none"  # pairs of blocks both without a sampler: the noise floor


@dataclass(frozen=True)
class Work:
    """One operation of a workload (queued on the device) and the device's synchronisation."""

    description: str
    step: Callable[[], object]
    synchronize: Callable[[], None]


def sgemm(args: argparse.Namespace, device: torch.device) -> Work:
    product = TorchSgemm(args.sgemm_n, device, seed=0)
    return Work(f"FP32 {args.sgemm_n}^3 matrix product", product, product.synchronize)


def deit(args: argparse.Namespace, device: torch.device) -> Work:
    model = build_vit(args.vit, 1, device)
    run = build_runner(model.forward, model.example, "eager", args.precision)
    return Work(f"eager {model.architecture} batch 1 {args.precision}", run, synchronizer(device))


def resnet18(args: argparse.Namespace, device: torch.device) -> Work:
    spec = hfta_workload("resnet18", image_size=args.resnet_image_size)
    torch.manual_seed(0)
    model = spec.make_model().to(device)
    inputs, targets = spec.make_batch(args.resnet_batch, torch.Generator().manual_seed(0), device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    trainer = _Trainer(model, optimizer, F.cross_entropy, args.precision, device.type)
    return Work(
        f"{spec.description}, training step at batch {args.resnet_batch}, SGD, {args.precision}",
        lambda: trainer.step(inputs, targets),
        synchronizer(device),
    )


BUILDERS: dict[str, Callable[[argparse.Namespace, torch.device], Work]] = {
    "sgemm": sgemm,
    "deit-b": deit,
    "resnet18": resnet18,
}


def time_block(work: Work, count: int) -> tuple[float, float, float]:
    """(seconds, start, end) of `count` operations between two synchronisations; start and end on
    time.time(), the clock the samplers stamp with."""
    work.synchronize()
    start_unix, started = time.time(), time.perf_counter()
    for _ in range(count):
        work.step()
    work.synchronize()
    return time.perf_counter() - started, start_unix, time.time()


def block_size(work: Work, block_s: float) -> tuple[int, float]:
    """Operations per block of about block_s seconds, and one operation's seconds: after a warm-up,
    from a run of a tenth of a block at least, so that short operations are timed over many."""
    time_block(work, 5)
    count = 1
    while (seconds := time_block(work, count)[0]) < block_s / 10:
        count *= 2
    one = seconds / count
    return max(1, round(block_s / one)), one


@dataclass
class Row:
    off_s: list[float]
    on_s: list[float]
    achieved_hz: list[float]
    dropped: int = 0


def compare(work: Work, count: int, source: TelemetrySource, kind: str, rate: float, pairs: int) -> Row:
    row = Row([], [], [])
    for _ in range(pairs):
        for sampled in random.sample([False, True], 2):  # off first or on first, at random
            if not sampled:
                row.off_s.append(time_block(work, count)[0])
            elif kind == NO_SAMPLER:
                row.on_s.append(time_block(work, count)[0])
            else:
                with open_sampler(source, rate, kind) as sampler:
                    seconds, start, end = time_block(work, count)
                row.on_s.append(seconds)
                row.achieved_hz.append(sampler.trace.rate_between(start, end))
                row.dropped += sampler.trace.dropped_samples
    return row


def paired_median(row: Row, resamples: int = 2000) -> tuple[float, float, float]:
    """The median of the per-pair on/off ratios and its 95% bootstrap interval."""
    ratios = np.array(row.on_s) / np.array(row.off_s)
    draws = np.random.default_rng(0).choice(ratios, size=(resamples, len(ratios)))
    low, high = np.percentile(np.median(draws, axis=1), [2.5, 97.5])
    return float(np.median(ratios)), float(low), float(high)


def sampler_costs(source: TelemetrySource, kind: str, times: int = 5) -> tuple[float, float]:
    """Median seconds that start() and stop() take."""
    starts, stops = [], []
    for _ in range(times):
        sampler = open_sampler(source, 50, kind)
        began = time.perf_counter()
        sampler.start()
        starts.append(time.perf_counter() - began)
        time.sleep(0.1)
        began = time.perf_counter()
        sampler.stop()
        stops.append(time.perf_counter() - began)
    return statistics.median(starts), statistics.median(stops)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", help="GPU index, or 'cpu' (default: 0 where a GPU is, else cpu)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    kinds = [*SAMPLERS, NO_SAMPLER]
    parser.add_argument("--samplers", nargs="+", choices=kinds, default=kinds)
    parser.add_argument("--rates", type=float, nargs="+", default=[50.0, 200.0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--block-s", type=float, default=0.25)
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--sgemm-n", type=int, help="default: 4096 on a GPU, 512 on the CPU")
    parser.add_argument(
        "--vit", choices=list(VIT_MODELS), default="deit-b", help="DeiT size (default deit-b)"
    )
    parser.add_argument("--resnet-batch", type=int, default=32)
    parser.add_argument("--resnet-image-size", type=int, default=64)
    parser.add_argument(
        "--precision", help="deit and resnet18: default fp16 (autocast) on a GPU, fp32 on the CPU"
    )
    args = parser.parse_args()
    if args.device is None:
        args.device = "0" if nvml.available()[0] else "cpu"
    on_gpu = args.device != "cpu"
    args.sgemm_n = args.sgemm_n or (4096 if on_gpu else 512)
    args.precision = args.precision or ("fp16" if on_gpu else "fp32")
    return args


def main() -> None:
    args = parse_args()
    nvml.number_cuda_like_nvml()  # CUDA's GPU N is NVML's GPU N, whose telemetry is read
    gpu = None if args.device == "cpu" else int(args.device)
    device = torch.device("cpu" if gpu is None else f"cuda:{gpu}")
    source = open_source(None if gpu is None else [gpu])
    name = "cpu" if gpu is None else nvml.all_gpu_info()[gpu].name
    try:
        for baseline in measure_idle(source, args.idle_s, 50).values():
            print(
                f"idle {name}: {baseline.power_w:.1f} W ({baseline.method}), {baseline.temperature_c:.0f} C"
            )
        for kind in [k for k in args.samplers if k != NO_SAMPLER]:
            start_s, stop_s = sampler_costs(source, kind)
            print(f"{kind} sampler: start {start_s * 1e3:.1f} ms, stop {stop_s * 1e3:.1f} ms (median of 5)")
        print(
            f"{'workload':>9} {'sampler':>8} {'rate_hz':>7} {'achieved':>8} {'min_hz':>7} {'dropped':>7} "
            f"{'off_ms':>9} {'on_ms':>9} {'on/off':>7} {'paired':>7} {'95% interval':>15}"
        )
        for workload in args.workloads:
            work = BUILDERS[workload](args, device)
            count, one_s = block_size(work, args.block_s)
            print(f"{workload}: {count} x {work.description} per block on {name} ({one_s * 1e3:.2f} ms each)")
            rows = [(rate, kind) for rate in args.rates for kind in args.samplers if kind != NO_SAMPLER]
            if NO_SAMPLER in args.samplers:
                rows.insert(0, (0.0, NO_SAMPLER))
            for rate, kind in rows:
                row = compare(work, count, source, kind, rate, args.pairs)
                paired, low, high = paired_median(row)
                off_ms, on_ms = statistics.median(row.off_s) * 1e3, statistics.median(row.on_s) * 1e3
                achieved = (
                    f"{statistics.median(row.achieved_hz):>8.1f} {min(row.achieved_hz):>7.1f}"
                    if row.achieved_hz
                    else f"{'-':>8} {'-':>7}"
                )
                print(
                    f"{workload:>9} {kind:>8} {rate:>7.0f} {achieved} {row.dropped:>7} {off_ms:>9.2f} "
                    f"{on_ms:>9.2f} {on_ms / off_ms:>7.4f} {paired:>7.4f} {low:>7.4f}-{high:.4f}"
                )
    finally:
        source.close()


if __name__ == "__main__":
    main()
