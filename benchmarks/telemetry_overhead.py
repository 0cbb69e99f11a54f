#!/usr/bin/env python3
"""How much does the background telemetry sampler slow the work it measures?

Times blocks of FP32 matrix products with the sampler off and on, alternating (off, on, off, on, ...) so
drift in clocks or temperature falls on both alike, and reports the median block time of each, their
ratio, and the sampler's achieved rate. Also prints the idle baseline. Runs on GPU 0, else on the CPU.

    python benchmarks/telemetry_overhead.py [--rates 50 200] [--pairs 10] [--block-s 0.5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from gpurepro import nvml
from gpurepro.sgemm.torch_mm import TorchSgemm
from gpurepro.telemetry import TelemetrySampler, measure_idle, open_source


def time_block(product: TorchSgemm, count: int) -> float:
    product.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        product()
    product.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", type=float, nargs="+", default=[50.0, 200.0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--block-s", type=float, default=0.5)
    parser.add_argument("--idle-s", type=float, default=5.0)
    args = parser.parse_args()

    gpu, _ = nvml.available()
    device = torch.device("cuda:0" if gpu and torch.cuda.is_available() else "cpu")
    source = open_source([0] if device.type == "cuda" else None)
    name = nvml.all_gpu_info()[0].name if device.type == "cuda" else "cpu"
    for baseline in measure_idle(source, args.idle_s, 50).values():
        print(f"idle {name}: {baseline.power_w:.1f} W ({baseline.method}), {baseline.temperature_c:.0f} C")

    product = TorchSgemm(4096 if device.type == "cuda" else 512, device, seed=0)
    time_block(product, 5)  # warm-up
    one = time_block(product, 5) / 5
    count = max(1, int(args.block_s / one))
    print(f"workload: {count} x FP32 {product.n}^3 products per block on {name} ({one * 1e3:.2f} ms each)")
    print(f"{'rate_hz':>8} {'achieved_hz':>11} {'off_ms':>9} {'on_ms':>9} {'on/off':>8} {'paired_med':>10}")
    for rate in args.rates:
        off, on, achieved = [], [], []
        for _ in range(args.pairs):
            off.append(time_block(product, count))
            with TelemetrySampler(source, rate) as sampler:
                on.append(time_block(product, count))
            achieved.append(sampler.trace.achieved_rate_hz)
        paired = statistics.median(b / a for a, b in zip(off, on, strict=True))
        off_ms, on_ms = statistics.median(off) * 1e3, statistics.median(on) * 1e3
        print(
            f"{rate:>8.0f} {statistics.median(achieved):>11.1f} {off_ms:>9.2f} {on_ms:>9.2f} "
            f"{on_ms / off_ms:>8.4f} {paired:>10.4f}"
        )
    source.close()


if __name__ == "__main__":
    main()
