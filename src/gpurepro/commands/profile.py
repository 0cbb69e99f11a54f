"""`gpurepro profile nsys|dcgm`: an Nsight Systems trace of one command, or DCGM profiling metrics sampled
for a while, where those tools exist; without them a plain message and no file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .. import provenance
from ..errors import GpureproError
from ..profiling import dcgm, nsys
from .options import add_config_hash_option, gpu_or_cpu, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="Nsight Systems trace of a command (nsys), or DCGM profiling metrics (dcgm)",
        description="Profile with the tools found here; without them, say so and write nothing.",
    )
    tools = parser.add_subparsers(dest="tool", metavar="TOOL", required=True)
    traced = tools.add_parser(
        "nsys",
        help="trace one run of a command with nsys profile and export its CUDA kernel summary",
        description="Run COMMAND once under `nsys profile --trace=cuda,nvtx,osrt`, then export the CUDA "
        "kernel summary with `nsys stats`. Writes OUT.nsys-rep and OUT_kern_sum.csv (with a provenance "
        "sidecar); existing reports are never overwritten.",
    )
    traced.add_argument("--out", required=True, type=Path, help="report stem (no extension)")
    traced.add_argument("--gpu", type=gpu_or_cpu, help="the GPU the command runs on, for provenance")
    traced.add_argument("--profile", default="", help="device profile, for provenance")
    add_config_hash_option(traced)
    traced.add_argument(
        "traced_command",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="the command to trace, after --: -- gpurepro sgemm 1024 20 0",
    )
    traced.set_defaults(func=run_nsys)
    sampled = tools.add_parser(
        "dcgm",
        help="sample DCGM profiling metrics (SM active, occupancy, tensor, DRAM, PCIe, FB used) for a while",
        description="Sample DCGM's profiling fields on the GPUs given, through the DCGM Python bindings or "
        "`dcgmi dmon`, into a tidy CSV (t_unix_s, gpu, field, field_id, value, unit).",
    )
    sampled.add_argument("--gpus", nargs="+", type=int, required=True, help="GPU indices")
    sampled.add_argument("--seconds", type=float, default=10.0, help="how long to sample (default 10)")
    sampled.add_argument(
        "--interval-ms", type=positive_int, default=100, help="sample interval (default 100)"
    )
    sampled.add_argument("--out", required=True, type=Path, help="CSV to write (never overwritten)")
    sampled.set_defaults(func=run_dcgm)


def run_nsys(args: argparse.Namespace) -> int:
    command = args.traced_command[1:] if args.traced_command[:1] == ["--"] else args.traced_command
    nsys.require("gpurepro profile nsys")  # before provenance.begin, which reads the GPU
    gpus = [] if args.gpu in (None, "cpu") else [args.gpu]
    started = provenance.begin(gpus, args.profile, args.config_hash, {"workload": args.out.name})
    nsys.profile(args.out, command, provenance.finish(started))
    return 0


def run_dcgm(args: argparse.Namespace) -> int:
    if args.seconds <= 0:
        raise GpureproError(f"--seconds must be positive, got {args.seconds}")
    with dcgm.dcgm_monitor(args.gpus, args.out, args.interval_ms) as status:
        if not status.available:
            raise GpureproError(f"{status.note}; nothing was sampled")
        print(f"sampling {args.seconds:g} s with {status.reason}", file=sys.stderr)
        time.sleep(args.seconds)
    return 0
