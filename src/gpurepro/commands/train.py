"""`gpurepro train resnet50`: ResNet-50 v1.5 training throughput (images/s), on one GPU, on several with
DistributedDataParallel, or on the CPU; also the variability study's noise workload (--until-stopped).

    gpurepro train resnet50 --gpus 0 --iterations 100           # one GPU, one process, no DDP wrapper
    gpurepro train resnet50 --gpus 0,1,2,3 --out ddp_4gpu.csv   # torchrun, one process per GPU, NCCL
    gpurepro train resnet50 --gpus cpu --nproc 2 --image-size 32 --batch-size 4   # gloo, two processes

Several processes are started through torchrun by this command itself; started by torchrun directly
(`torchrun --standalone --nproc-per-node 2 -m gpurepro train resnet50 --gpus 0,1`), it is one of the
ranks. Batch size, precision, channels-last, iterations, warm-up and the synthetic images' size default
to the device profile's `train` section. Rank 0 writes --out: one row per logging interval (the warm-up
first), with a provenance sidecar that holds the summary (images/s total and per GPU, warm-up left out).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import nvml
from ..datasets.specs import SOURCES, SPECS
from ..datasets.workers import resolve_workers
from ..errors import GpureproError
from ..measure_job import JobFiles, Target, record_failure, resolve_target
from ..point_failure import first_line
from ..precision import PRECISIONS, pick_precision
from ..results import ensure_absent
from ..telemetry.cooldown import busy
from .options import (
    add_config_hash_option,
    add_end_record_option,
    default_gpu,
    positive_float,
    positive_int,
)

if TYPE_CHECKING:
    from ..training.rank import TrainJob

MODEL_NAMES = ("resnet50",)  # training.model.MODELS; named here so `--help` does not wait for torch
SYNTHETIC_CLASSES = 1000  # training.batches.SYNTHETIC_CLASSES


def gpu_list(value: str) -> list[int] | str:
    """'cpu', or NVML indices '0,1,3' (each once)."""
    if value == "cpu":
        return value
    try:
        gpus = [int(part) for part in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value}' is not 'cpu' or GPU indices such as 0,1,2") from None
    if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise argparse.ArgumentTypeError(f"'{value}': GPU indices must be 0 or more, each listed once")
    return gpus


def _workers(value: str) -> int:
    try:
        return resolve_workers(value)
    except GpureproError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="training throughput of ResNet-50 (images/s) on one or several GPUs (DDP), or the CPU",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
    )
    parser.add_argument("model", choices=MODEL_NAMES, help="torchvision model (resnet50 is ResNet-50 v1.5)")
    parser.add_argument(
        "--gpus", type=gpu_list,
        help="NVML indices of the GPUs (0,1,2,3: one process each, DDP over NCCL) or 'cpu' "
        "(default: GPU 0 where NVML finds one, else cpu)",
    )  # fmt: skip
    parser.add_argument(
        "--nproc", type=positive_int,
        help="processes: one per GPU listed (the default); with --gpus cpu, CPU processes (gloo, default 1)",
    )  # fmt: skip
    parser.add_argument("--batch-size", type=positive_int, help="images per GPU per step (profile default)")
    parser.add_argument(
        "--precision", choices=PRECISIONS,
        help="fp32 (TF32 off), tf32, fp16 autocast with GradScaler (AMP), bf16 autocast (profile default)",
    )  # fmt: skip
    parser.add_argument(
        "--channels-last",
        action=argparse.BooleanOptionalAction,
        help="NHWC model and input (profile default)",
    )
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--iterations", type=positive_int, help="timed iterations (profile default)")
    length.add_argument("--duration", type=positive_float, help="timed seconds instead of iterations")
    length.add_argument(
        "--until-stopped", action="store_true", help="train until SIGTERM or Ctrl-C (the noise workload)"
    )
    parser.add_argument("--warmup", type=int, help="untimed iterations first (profile default)")
    parser.add_argument("--log-interval", type=positive_int, default=10, help="iterations per timed row")
    data = parser.add_argument_group("data (as workflow/rules/data.smk passes it)")
    data.add_argument("--source", choices=SOURCES, default="synthetic")
    data.add_argument("--root", type=Path, help="dataset folder (tiny-imagenet, imagenet)")
    data.add_argument("--like", choices=list(SPECS), default="tiny-imagenet", help="synthetic's image size")
    data.add_argument(
        "--image-size",
        type=positive_int,
        help="synthetic images' side (default: the profile's, else --like's)",
    )
    data.add_argument(
        "--num-classes", type=positive_int,
        help="classes the model predicts (synthetic: 1000, the Horovod benchmark 10000; a real set: its own)",
    )  # fmt: skip
    data.add_argument(
        "--workers", type=_workers, default=0, help="DataLoader workers per process for real sets, or 'auto'"
    )
    data.add_argument("--seed", type=int, default=0)
    group = parser.add_argument_group("results")
    group.add_argument("--profile", help="device profile the result is filed under (default: auto-detect)")
    group.add_argument(
        "--device-check", choices=["error", "warn"], default=None,
        help="when a GPU is not the profile's model: stop (error, default) or record the mismatch (warn)",
    )  # fmt: skip
    group.add_argument("--out", type=Path, help="per-interval CSV (with a provenance sidecar)")
    group.add_argument("--ready-file", type=Path, help="written once the warm-up is done (noise workload)")
    add_config_hash_option(group)
    add_end_record_option(group)
    parser.set_defaults(func=run)


def _device_check(args: argparse.Namespace) -> str:
    return args.device_check or os.environ.get("GPUREPRO_DEVICE_CHECK", "error")


def settings_from(args: argparse.Namespace, target: Target):  # -> loop.TrainSettings
    """The run's settings: the options given, the profile's `train` section for the rest."""
    from ..training.batches import DataOptions
    from ..training.loop import TrainSettings

    defaults: dict[str, Any] = target.profile.get("train", {})
    precision = pick_precision(args.precision or defaults.get("precision"), target.profile)
    warmup = args.warmup if args.warmup is not None else defaults.get("warmup", 10)
    if warmup < 0:
        raise GpureproError(f"--warmup must be 0 or more, got {warmup}")
    iterations = args.iterations
    if iterations is None and args.duration is None and not args.until_stopped:
        iterations = defaults.get("iterations", 100)
    # Synthetic images at the profile's size (the published figures' 224), unless told otherwise.
    image_size = args.image_size
    if image_size is None and args.source == "synthetic":
        image_size = defaults.get("image_size")
    channels_last = args.channels_last
    if channels_last is None:
        channels_last = defaults.get("channels_last", target.gpu_index is not None)
    return TrainSettings(
        model=args.model,
        batch_size=args.batch_size or defaults.get("batch_size", 32),
        precision=precision,
        channels_last=channels_last,
        warmup=warmup,
        iterations=iterations,
        duration_s=args.duration,
        log_interval=args.log_interval,
        data=DataOptions(
            args.source, args.root, args.like, image_size, args.num_classes, args.workers, args.seed
        ),
    )


def _describe(settings, gpus: list[int] | str, processes: int) -> dict[str, Any]:
    """The point's columns in the raw table (and the provenance's `workload`); image size and classes as
    the data will have them (a real set's own classes replace these once it is read)."""
    data = settings.data
    synthetic = data.source == "synthetic"
    spec = SPECS[data.like if synthetic else data.source]
    return {
        "model": settings.model,
        "data": f"synthetic-{data.image_size or spec.height}px" if synthetic else data.source,
        "image_size": data.image_size or spec.height,
        "num_classes": data.num_classes or (SYNTHETIC_CLASSES if synthetic else spec.classes),
        "precision": settings.precision,
        "channels_last": settings.channels_last,
        "batch_per_gpu": settings.batch_size,
        "devices": "cpu" if gpus == "cpu" else ",".join(map(str, gpus)),
        "world_size": processes,
    }


def _processes(args: argparse.Namespace, gpus: list[int] | str) -> int:
    if gpus == "cpu":
        return args.nproc or 1
    if args.nproc is not None and args.nproc != len(gpus):
        raise GpureproError(
            f"--nproc {args.nproc} with --gpus {','.join(map(str, gpus))}: one process per GPU "
            f"({len(gpus)}); leave --nproc out"
        )
    return len(gpus)


def _job(args: argparse.Namespace, target: Target, gpus: list[int] | str, processes: int) -> TrainJob:
    """The run as every process of it needs it: settings resolved, where the result goes."""
    from ..training.rank import TrainJob

    settings = settings_from(args, target)
    return TrainJob(
        settings=settings,
        gpus=gpus,
        profile=target.profile["name"],
        device_mismatch=target.device_mismatch,
        describe=_describe(settings, gpus, processes),
        config_hash=args.config_hash,
        out=args.out,
        ready_file=args.ready_file,
        until_stopped=args.until_stopped,
    )


def run(args: argparse.Namespace) -> int:
    from ..training import distributed

    if args.until_stopped and args.out:
        raise GpureproError("--until-stopped is the noise workload and writes no table; leave --out out")
    if distributed.under_torchrun():
        return _rank(args, distributed.world_from_environment())
    gpus = args.gpus if args.gpus is not None else default_gpu()
    gpus = [gpus] if isinstance(gpus, int) else gpus
    processes = _processes(args, gpus)
    # Every GPU is checked against the profile (its model; CUDA and NVML naming it alike); the first
    # one's target files the result.
    targets = [
        resolve_target(g, args.profile, _device_check(args)) for g in (["cpu"] if gpus == "cpu" else gpus)
    ]
    target = targets[0]
    job = _job(args, target, gpus, processes)
    if args.out:
        ensure_absent(args.out)
    with busy([] if gpus == "cpu" else list(gpus), args.idle_temperature_dir):
        return _train(args, target, job, processes)


def _train(args: argparse.Namespace, target: Target, job: TrainJob, processes: int) -> int:
    """One process, or one per GPU through torchrun; a failed rank's reason filed in --out."""
    if processes == 1:
        return _single(target, job)
    from ..training import launch

    try:
        failure = launch.run(processes, job)
    except KeyboardInterrupt:
        if not args.until_stopped:
            raise
        # the end of a noise workload: the ranks are stopped, nothing to file
        print("stopped by a signal; every rank stopped", file=sys.stderr)
        return 0
    if failure:
        return _record_failure(target, job, failure)
    return 0


def _record_failure(target: Target, job: TrainJob, reason: str) -> int:
    """The run's failure in --out; training writes no telemetry trace beside it."""
    return record_failure(JobFiles(job.out, config_hash=job.config_hash), target, job.describe, reason)


def _single(target: Target, job: TrainJob) -> int:
    """One process, no DDP wrapper: the 1-GPU (or CPU) baseline."""
    from ..training import rank
    from ..training.distributed import SINGLE

    device = rank.device_for(job, SINGLE)
    started = rank.begin(job)
    try:
        result = rank.train_job(job, device, SINGLE)
    except RuntimeError as err:  # torch.OutOfMemoryError is one
        if not rank.out_of_memory(err):
            raise
        return _record_failure(target, job, f"out of memory: {first_line(err)}")
    rank.publish(job, started, result)
    return 0


def _rank(args: argparse.Namespace, world) -> int:
    """One rank of a torchrun the user started on this command (`torchrun ... -m gpurepro train ...`):
    it checks its own GPU against the profile, then trains as the ranks this command launches do."""
    from ..training import rank

    gpus = args.gpus if args.gpus is not None else list(range(world.size))
    if gpus != "cpu" and len(gpus) != world.size:
        raise GpureproError(f"--gpus lists {len(gpus)} GPU(s) for {world.size} torchrun processes")
    index: int | str = "cpu" if gpus == "cpu" else gpus[world.local_rank]
    target = resolve_target(index, args.profile, _device_check(args))
    rank.run(_job(args, target, gpus, world.size), world)
    return 0


def main(argv: list[str]) -> int:
    """This command alone, as the noise workload starts it (`python -m gpurepro.commands.train resnet50
    ...`): the process imports the training it runs, not every subcommand of `gpurepro`."""
    parser = argparse.ArgumentParser(prog="gpurepro")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["train", *argv])
    nvml.number_cuda_like_nvml()
    try:
        return run(args)
    except GpureproError as err:
        print(f"gpurepro train: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
