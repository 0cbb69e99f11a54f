"""`gpurepro hfta`: training throughput of B models at one sweep point, trained one after another
(serial), as B processes on one GPU (concurrent), as B processes under a private MPS daemon (mps), or
horizontally fused into one array (hfta), under the shared harness (cool-down, idle baseline, telemetry).
A point that runs out of memory or fails is recorded with its reason; mps without the MPS control binary
is recorded as skipped."""

from __future__ import annotations

import argparse
import math
import sys

import torch

from ..errors import GpureproError
from ..hfta_study import (
    DATA_SOURCES,
    MODES,
    OPTIMIZERS,
    PRECISIONS,
    STEP_COMPILED,
    STEP_GRAPHED,
    STEP_STOCK,
    WORKLOADS,
)
from ..hfta_study.graphs import GRAPH_CHOICES, use_graphs
from ..hfta_study.launcher import PointOutcome
from ..hfta_study.mps import MpsUnavailable, control_binary
from ..hfta_study.point import Point, workload
from ..hfta_study.training import TrainSettings
from ..measure_job import record_failure, resolve_target, run_job
from ..precision import pick_precision
from .options import (
    add_measurement_options,
    default_gpu,
    gpu_or_cpu,
    job_files,
    job_settings,
    non_negative_float,
    non_negative_int,
    positive_int,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "hfta",
        help="training throughput of B models: serial, concurrent, MPS or horizontally fused (one point)",
        description="Train B copies of a workload at one sweep point and record samples/s (warm-up "
        "excluded) per model, process or fused array, with telemetry and DCGM metrics where present.",
    )
    parser.add_argument("--workload", required=True, choices=WORKLOADS)
    parser.add_argument(
        "--mode", required=True, choices=MODES,
        help="serial: one model after another; concurrent: B processes on one device; mps: B processes "
        "under the MPS daemon (GPU only); hfta: one process training the fused array",
    )  # fmt: skip
    parser.add_argument(
        "-B", "--models", required=True, type=positive_int, help="number of models trained (HFTA's B)"
    )
    parser.add_argument(
        "--precision", choices=PRECISIONS, default="fp32",
        help="fp32 (TF32 off), or AMP: fp16 autocast with a gradient scaler, bf16 autocast (default fp32)",
    )  # fmt: skip
    parser.add_argument("--batch-size", type=positive_int, default=128, help="samples per model per step")
    parser.add_argument("--steps", type=positive_int, default=50, help="timed steps per model (default 50)")
    parser.add_argument(
        "--warmup", type=non_negative_int, default=10, help="untimed steps first (default 10)"
    )
    parser.add_argument(
        "--image-size", type=positive_int, default=64, help="resnet18 image side (default 64)"
    )
    parser.add_argument("--seq-len", type=positive_int, default=128, help="transformer tokens (default 128)")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd", help="sgd (momentum 0.9) or adamw")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate (default 0.01)")
    parser.add_argument(
        "--data-source", choices=DATA_SOURCES, default="synthetic",
        help="synthetic batches from the workload, or real Tiny-ImageNet batches (resnet18 at 64x64)",
    )  # fmt: skip
    parser.add_argument("--data-root", help="the Tiny-ImageNet folder (with its manifest.json)")
    parser.add_argument(
        "--data-batches", type=positive_int, default=4,
        help="batches per model put on the device once and cycled through (default 4)",
    )  # fmt: skip
    parser.add_argument(
        "--gpu", type=gpu_or_cpu, help="GPU index, or 'cpu' (default: GPU 0 where NVML finds one, else cpu)"
    )
    parser.add_argument(
        "--graphs", choices=GRAPH_CHOICES, default="off",
        help="replay each training step as one CUDA graph (forward, backward, optimizer, scaler): auto "
        "where CUDA is, on, or off, the stock eager step (default off)",
    )  # fmt: skip
    parser.add_argument(
        "--compile", choices=("on", "off"), default="off",
        help="compile the model with torch.compile after one eager step (the 'compiled' step kind; with "
        "--graphs also graphed); default off",
    )  # fmt: skip
    parser.add_argument(
        "--min-timed-s", type=non_negative_float, default=0.0,
        help="each unit (model, process, fused array) trains at least this long after its warm-up: its "
        "timed steps are --steps or more (default 0: exactly --steps)",
    )  # fmt: skip
    parser.add_argument(
        "--dropped-steps", type=non_negative_int, default=0,
        help="untimed steps after the warm-up, once all processes run together (default 0)",
    )  # fmt: skip
    parser.add_argument("--run", type=positive_int, default=1, help="repeat number")
    parser.add_argument(
        "--worker-timeout-s", type=float, default=3600.0,
        help="concurrent/mps: give up on processes that have not finished after this long",
    )  # fmt: skip
    add_measurement_options(parser)
    parser.set_defaults(func=run)


def _check(args: argparse.Namespace) -> None:
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise GpureproError(f"--lr must be a positive number, got {args.lr}")
    if args.worker_timeout_s <= 0:
        raise GpureproError(f"--worker-timeout-s must be positive, got {args.worker_timeout_s}")
    if args.data_source == "tiny-imagenet":
        if args.workload != "resnet18":
            raise GpureproError(
                f"--data-source tiny-imagenet feeds resnet18 only; {args.workload} trains on synthetic data"
            )
        if args.data_root is None:
            raise GpureproError("--data-source tiny-imagenet needs --data-root (the dataset folder)")
        if args.image_size != 64:
            raise GpureproError(f"Tiny-ImageNet images are 64x64; got --image-size {args.image_size}")
    elif args.data_root is not None:
        raise GpureproError("--data-root is for --data-source tiny-imagenet")
    if args.graphs == "on" and args.optimizer != "sgd":
        raise GpureproError("--graphs on replays steps with the fused SGD kernels; use --optimizer sgd")


def _data(args: argparse.Namespace) -> str:
    """How the point was fed, in words, for the table."""
    kind = "real Tiny-ImageNet" if args.data_source == "tiny-imagenet" else "synthetic"
    return f"{args.data_source}: {args.data_batches} {kind} batches per model on the device, cycled"


def run(args: argparse.Namespace) -> int:
    _check(args)
    gpu = default_gpu() if args.gpu is None else args.gpu
    target = resolve_target(gpu, args.profile, args.device_check)
    pick_precision(args.precision, target.profile)  # refuses a precision the profile does not support
    if target.gpu_index is not None and not torch.cuda.is_available():
        raise GpureproError(
            f"NVML sees GPU {target.gpu_index}, but this torch has no CUDA ({torch.__version__})"
        )
    try:
        graphs = use_graphs(args.graphs, target.torch_device)
    except ValueError as why:
        raise GpureproError(f"--graphs: {why}") from None
    if graphs and args.optimizer != "sgd":  # auto: only the SGD step can be captured
        print(
            f"--graphs auto: {args.optimizer} steps run eagerly (graphs need --optimizer sgd)",
            file=sys.stderr,
        )
        graphs = False
    settings = TrainSettings(
        workload=args.workload, batch_size=args.batch_size, precision=args.precision, steps=args.steps,
        warmup=args.warmup, optimizer=args.optimizer, lr=args.lr, seed=args.seed,
        device=target.torch_device, image_size=args.image_size, seq_len=args.seq_len,
        data_source=args.data_source, data_root=args.data_root, data_batches=args.data_batches,
        graphs=graphs, compiled=args.compile == "on", min_timed_s=args.min_timed_s,
        dropped_steps=args.dropped_steps,
    )  # fmt: skip
    describe = {
        "workload": args.workload,
        "mode": args.mode,
        "precision": args.precision,
        "b": args.models,
        "batch_size": args.batch_size,
        "run": args.run,
        "image_size": args.image_size if args.workload == "resnet18" else None,
        "seq_len": args.seq_len if args.workload == "transformer" else None,
        "optimizer": args.optimizer,
        "lr": args.lr,
        "timed_steps": args.steps,
        "warmup_steps_per_model": args.warmup,
        "data": _data(args),
        "step": STEP_COMPILED if args.compile == "on" else STEP_GRAPHED if graphs else STEP_STOCK,
        # the shortest energy window the point's units are read over (summary: NaN energy below it)
        "min_energy_window_s": args.energy_window_s,
    }
    label = f"{args.workload} {args.mode} {describe['step']} {args.precision} B={args.models} run {args.run}"
    binary = None
    if args.mode == "mps":
        try:
            binary = control_binary()
        except MpsUnavailable as why:  # no MPS on this machine: the point says so, with no numbers
            return record_failure(job_files(args), target, describe, str(why), status="skipped")
        if target.gpu_index is None:
            raise GpureproError(
                "--mode mps runs B processes under the MPS daemon and needs a GPU, not the cpu"
            )
    point = Point(args.mode, args.models, settings, target.gpu_index, args.worker_timeout_s, binary)
    try:
        run_job(job_settings(args), target, describe, lambda: workload(point))
    except PointOutcome as outcome:
        return record_failure(job_files(args), target, describe, outcome.reason, status=outcome.status)
    print(f"done: {label}", file=sys.stderr)
    return 0
