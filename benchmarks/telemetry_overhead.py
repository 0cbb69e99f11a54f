#!/usr/bin/env python3
"""How much does the telemetry sampler slow the work it measures, in its own process and as a thread?

Three workloads, all in this one process:
- sgemm: FP32 matrix products (4096^3 on a GPU), bound by the GPU; the host waits.
- deit-b: eager DeiT-B inference at batch 1 under fp16 autocast (about 7 ms on an H100), bound by the
  host: Python launches one kernel per op, and a sampler thread competes with it for the interpreter.
- resnet18: one training step of the HFTA study's ResNet-18 (64x64 images, 200 classes) at batch 32,
  SGD with momentum under AMP (fp16 autocast and a gradient scaler), also bound by the host.

Each workload is built, warmed up, and sized into blocks of back-to-back operations of about --block-s
seconds. A row of the table times --pairs pairs of blocks, one block "off" and one "on", each pair in a
random order and every block straight after the one before, with no idle gap in which the GPU's clocks
could drop, so that drift in clocks, temperature or the host's load falls on both alike. A row starts
with one block left out (the set-up before it leaves caches and the host's load unlike the blocks
after). Python's garbage collector stays out of the blocks: before each row it collects, freezes every
object it tracks and is switched off until the row ends (--keep-gc leaves it on): a full collection
walks some 400,000 objects with torch loaded, up to 0.2 s, a block's length. The measured process is
not pinned to CPUs: the header records the CPUs it may use and the host's load. For a given time per
row, shorter blocks and more pairs resolve finer where block times drift (successive blocks correlate),
as a pair's blocks then lie closer together: on a 2-core CPU host, rows without a sampler gave 95%
intervals of +-0.16% with 400 pairs of 0.05 s blocks, +-0.31% with 200 of 0.1 s, +-0.49% with 100 of
0.2 s (20% trimmed mean, both host-bound workloads). A GPU host's launches are noisier: on an H100,
the host-bound rows needed 1,600 pairs of 0.05 s (--pairs 1600 --block-s 0.05) to resolve 0.5%
(+-0.3%; +-0.4% to +-1.6% with 400). The rows:
- none: no sampler at all; "off" and "on" blocks are timed alike. Its spread is the noise floor: what
  an overhead must exceed to be seen at all on this host and workload.
- process: one sampling process started for the whole row and kept running through it. "Off" blocks are
  timed with it paused (SIGSTOP: it exists but takes no CPU time and makes no NVML call), "on" blocks
  with it running (SIGCONT), so the row compares sampling with no sampling and nothing else: no start or
  stop between blocks. A resumed sampler finds the deadlines of its pause passed and counts them as
  dropped, and takes two samples at once (the one its pause held back, then one for the latest deadline
  passed) before it returns to its schedule; both are the pausing's, not the sampler's, so the row
  reports only what happened inside its on-blocks once the sampler is back on its schedule: the rate
  achieved there (Trace.rate_between per on-block) and the deadlines there that got no sample
  ("missed"), never the trace's dropped count. Those catch-up samples (and, on a GPU, an energy read
  the energy thread owes) still fall in the on-block's time: one sample more than a running sampler
  takes in a block, so if anything the row overstates the sampler's cost.
- thread: a sampler thread cannot be paused, so it is started before each "on" block and stopped after
  it (the thread's start and stop take under 5 ms and lie outside the timed block). Fewer pairs
  (--thread-pairs), as each costs a start and stop.

Printed per row: the pairs, the rate achieved during the on-blocks (median and lowest) and the deadlines
missed in them, the garbage collections during the row, the median block time off and on, and the
per-pair on/off ratios: their median with its 95% bootstrap interval and their interquartile range (the
spread of single pairs); their mean, as the exp of the mean of their logs with --trim (20%) cut at
either end, with its 95% bootstrap interval; and a verdict against --target (0.5%): "<0.5%" where the
mean's interval lies below 1.005, ">=0.5%" where it lies above, "unresolved" where it straddles it. For
normal noise the trimmed mean's interval is 0.86 times as wide as the median's from the same pairs (the
median needs 1.35 times the pairs); for the heavy-tailed noise of a CPU host 0.8 to 1.5 times as wide
(see log_mean). Before the table: the idle baseline, each sampler's start and stop cost, and the
conditions of the measured process.

    python benchmarks/telemetry_overhead.py [--device 0] [--workloads sgemm deit-b resnet18]
        [--rates 50 200] [--samplers process thread none] [--pairs 200] [--thread-pairs 50]
        [--block-s 0.1] [--target 0.005] [--trim 0.2] [--keep-gc]

`--device cpu` runs the same code on the CPU, e.g. as a smoke run with small sizes:

    python benchmarks/telemetry_overhead.py --device cpu --sgemm-n 256 --vit deit-t --resnet-batch 4 \
        --resnet-image-size 32 --pairs 5 --block-s 0.1 --idle-s 1
"""

from __future__ import annotations

import argparse
import time

import torch
from sampler_overhead.blocks import block_size, time_block
from sampler_overhead.estimate import TARGET, TRIM
from sampler_overhead.rows import NO_SAMPLER, run_row, sampler_costs
from sampler_overhead.table import HEADER, LEGEND, conditions, format_row
from sampler_overhead.workloads import BUILDERS, WORKLOADS

from gpurepro import nvml
from gpurepro.inference.models import VIT_MODELS
from gpurepro.telemetry import SAMPLERS, TelemetrySource, measure_idle, open_source


def rows_of(args: argparse.Namespace) -> list[tuple[str, float]]:
    """(sampler, rate) of every row of a workload: the noise floor first."""
    rows = [(kind, rate) for rate in args.rates for kind in args.samplers if kind != NO_SAMPLER]
    return ([(NO_SAMPLER, 0.0)] if NO_SAMPLER in args.samplers else []) + rows


def benchmark_workload(
    args: argparse.Namespace, workload: str, device: torch.device, source: TelemetrySource, name: str
) -> None:
    work = BUILDERS[workload](args, device)
    count, one_s = block_size(work, args.block_s)
    time_block(work, count)  # a whole block as warm-up: clocks and caches settle at the block's load
    print(f"{workload}: {count} x {work.description} per block on {name} ({one_s * 1e3:.2f} ms each)")
    for kind, rate in rows_of(args):
        row = run_row(args, work, count, source, kind, rate)
        print(format_row(workload, kind, rate, row, args.trim, args.target), flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", help="GPU index, or 'cpu' (default: 0 where a GPU is, else cpu)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    kinds = [*SAMPLERS, NO_SAMPLER]
    parser.add_argument("--samplers", nargs="+", choices=kinds, default=kinds)
    parser.add_argument("--rates", type=float, nargs="+", default=[50.0, 200.0])
    parser.add_argument("--pairs", type=int, default=200, help="pairs of blocks per row (default 200)")
    parser.add_argument(
        "--thread-pairs", type=int, help="pairs per thread row, each with a start and stop (default 50)"
    )
    parser.add_argument("--block-s", type=float, default=0.1, help="seconds per block (default 0.1)")
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument(
        "--target", type=float, default=TARGET, help="overhead the verdict judges against (default 0.005)"
    )
    parser.add_argument(
        "--trim", type=float, default=TRIM, help="share of log ratios cut at either end of the mean (0.2)"
    )
    parser.add_argument(
        "--keep-gc", action="store_true", help="leave the garbage collector on in rows (to compare)"
    )
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
    if args.pairs < 2 or (args.thread_pairs is not None and args.thread_pairs < 2):
        parser.error("a row needs at least 2 pairs")
    if not 0 <= args.trim < 0.5:
        parser.error("--trim must be at least 0 and below 0.5")
    if args.device is None:
        args.device = "0" if nvml.available()[0] else "cpu"
    on_gpu = args.device != "cpu"
    args.sgemm_n = args.sgemm_n or (4096 if on_gpu else 512)
    args.precision = args.precision or ("fp16" if on_gpu else "fp32")
    args.thread_pairs = args.thread_pairs or min(args.pairs, 50)
    return args


def main() -> None:
    args = parse_args()
    nvml.number_cuda_like_nvml()  # CUDA's GPU N is NVML's GPU N, whose telemetry is read
    gpu = None if args.device == "cpu" else int(args.device)
    device = torch.device("cpu" if gpu is None else f"cuda:{gpu}")
    source = open_source(None if gpu is None else [gpu])
    name = "cpu" if gpu is None else nvml.all_gpu_info()[gpu].name
    began = time.perf_counter()
    try:
        for baseline in measure_idle(source, args.idle_s, 50).values():
            print(
                f"idle {name}: {baseline.power_w:.1f} W ({baseline.method}), {baseline.temperature_c:.0f} C"
            )
        for kind in [k for k in args.samplers if k != NO_SAMPLER]:
            start_s, stop_s = sampler_costs(source, kind)
            print(f"{kind} sampler: start {start_s * 1e3:.1f} ms, stop {stop_s * 1e3:.1f} ms (median of 5)")
        print(conditions(args.keep_gc))
        print(LEGEND.format(trim=args.trim, target=args.target))
        print(HEADER)
        for workload in args.workloads:
            benchmark_workload(args, workload, device, source, name)
    finally:
        source.close()
    print(f"{time.perf_counter() - began:.0f} s in all")


if __name__ == "__main__":
    main()
