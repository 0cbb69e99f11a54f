"""`gpurepro telemetry`: record a telemetry trace on its own, e.g. beside a workload you start yourself."""

from __future__ import annotations

import argparse
import sys
import time

from ..telemetry import DEFAULT_SAMPLER, measure_idle, open_sampler, open_source
from .options import add_sampler_option, gpu_or_cpu


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "telemetry", help="sample power, clocks, temperature and throttle reasons for a while"
    )
    parser.add_argument("gpus", nargs="+", type=gpu_or_cpu, help="GPU indices, or 'cpu'")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate-hz", type=float, default=50.0)
    add_sampler_option(parser, DEFAULT_SAMPLER)
    parser.add_argument("--idle", action="store_true", help="report the idle baseline instead of a trace")
    parser.add_argument("--out", help="CSV for the trace (default: stdout)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    indices = [g for g in args.gpus if g != "cpu"]
    source = open_source(indices or None)
    try:
        if args.idle:
            for device, idle in measure_idle(source, args.seconds, args.rate_hz, args.sampler).items():
                print(f"{device}: idle {idle.power_w:.1f} W ({idle.method}), {idle.temperature_c:.0f} C")
            return 0
        with open_sampler(source, args.rate_hz, args.sampler) as sampler:
            time.sleep(args.seconds)
    finally:
        source.close()
    trace = sampler.trace
    assert trace is not None
    trace.frame.to_csv(args.out or "/dev/stdout", index=False)
    print(
        f"{len(trace.frame)} samples, {trace.achieved_rate_hz:.1f} Hz achieved per device, "
        f"{trace.dropped_samples} dropped ({trace.sampler} sampler)",
        file=sys.stderr,
    )
    return 0
