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
from typing import Any

from .. import provenance
from ..datasets.specs import SOURCES, SPECS
from ..datasets.workers import resolve_workers, usable_cpus
from ..errors import GpureproError
from ..measure_job import Target, record_failure, resolve_target
from ..profiles import load_profile
from ..results import ensure_absent, write_raw
from .infer import default_gpu, pick_precision
from .options import add_config_hash_option, positive_int

MODEL_NAMES = ("resnet50",)  # training.model.MODELS; named here so `--help` does not wait for torch
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
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


def _positive_float(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return number


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
    length.add_argument("--duration", type=_positive_float, help="timed seconds instead of iterations")
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
    # record_failure writes a trace beside a failed point's table where there is one; training has none.
    parser.set_defaults(func=run, trace_out=None)


def _device_check(args: argparse.Namespace) -> str:
    return args.device_check or os.environ.get("GPUREPRO_DEVICE_CHECK", "error")


def settings_from(args: argparse.Namespace, target: Target):  # -> loop.TrainSettings
    """The run's settings: the options given, the profile's `train` section for the rest."""
    from ..training.batches import DataOptions
    from ..training.loop import TrainSettings

    defaults: dict[str, Any] = target.profile.get("train", {})
    precision = pick_precision(args.precision or defaults.get("precision"), target)
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
    settings = settings_from(args, target)
    describe = _describe(settings, gpus, processes)
    if args.out:
        ensure_absent(args.out)
    if processes == 1:
        return _single(args, target, settings, describe, gpus)
    from ..training import launch

    try:
        failure = launch.run(
            processes,
            _worker_argv(args, gpus, settings),
            None if gpus == "cpu" else gpus,
            target.profile["name"],
        )
    except KeyboardInterrupt:
        if not args.until_stopped:
            raise
        # the end of a noise workload: the ranks are stopped, nothing to file
        print("stopped by a signal; every rank stopped", file=sys.stderr)
        return 0
    if failure:
        return record_failure(args, target, describe, failure)
    return 0


def _worker_argv(args: argparse.Namespace, gpus: list[int] | str, settings) -> list[str]:
    """This command for each rank, with every setting spelled out (the launcher resolved the defaults)."""
    argv = ["train", args.model, "--gpus", "cpu" if gpus == "cpu" else ",".join(map(str, gpus))]
    argv += ["--batch-size", str(settings.batch_size), "--precision", settings.precision]
    argv += ["--channels-last" if settings.channels_last else "--no-channels-last"]
    argv += ["--warmup", str(settings.warmup), "--log-interval", str(settings.log_interval)]
    if settings.iterations is not None:
        argv += ["--iterations", str(settings.iterations)]
    elif settings.duration_s is not None:
        argv += ["--duration", str(settings.duration_s)]
    else:
        argv += ["--until-stopped"]
    data = settings.data
    argv += [
        "--source",
        data.source,
        "--like",
        data.like,
        "--workers",
        str(data.workers),
        "--seed",
        str(data.seed),
    ]
    for option, value in (
        ("--root", data.root),
        ("--image-size", data.image_size),
        ("--num-classes", data.num_classes),
    ):
        if value is not None:
            argv += [option, str(value)]
    for option, value in (
        ("--out", args.out),
        ("--ready-file", args.ready_file),
        ("--profile", args.profile),
    ):
        if value is not None:
            argv += [option, str(value)]
    return argv + ["--device-check", _device_check(args), "--config-hash", args.config_hash]


def _single(args: argparse.Namespace, target: Target, settings, describe: dict[str, Any], gpus) -> int:
    """One process, no DDP wrapper: the 1-GPU (or CPU) baseline."""
    import torch

    from ..training import distributed

    device = torch.device("cpu")
    if target.gpu_index is not None:
        if not torch.cuda.is_available():
            raise GpureproError(
                f"NVML sees GPU {target.gpu_index}, but this torch has no CUDA ({torch.__version__})"
            )
        device = torch.device("cuda", distributed.cuda_index(target.gpu_index))
        torch.cuda.set_device(device)
    started = _begin(args, target, gpus, describe)
    try:
        result = _train(args, settings, device, distributed.SINGLE)
    except (torch.OutOfMemoryError, RuntimeError) as err:
        if not _out_of_memory(err):
            raise
        return record_failure(args, target, describe, f"out of memory: {_first_line(err)}")
    _publish(args, started, describe, result, target.profile["name"])
    return 0


def _rank(args: argparse.Namespace, world) -> int:
    """One rank under torchrun: its own GPU (or a share of the CPU), the process group; rank 0 writes.
    Any failure is filed for the launcher (which records the point as failed) before it propagates."""
    import torch

    from ..training import distributed, launch

    try:
        gpus = args.gpus if args.gpus is not None else list(range(world.size))
        if gpus != "cpu" and len(gpus) != world.size:
            raise GpureproError(f"--gpus lists {len(gpus)} GPU(s) for {world.size} torchrun processes")
        index: int | str = "cpu" if gpus == "cpu" else gpus[world.local_rank]
        if launch.CHECKED_PROFILE in os.environ:  # the launcher checked every GPU before starting ranks
            profile = load_profile(os.environ[launch.CHECKED_PROFILE])
            target = Target(None if index == "cpu" else int(index), profile, None)
        else:
            target = resolve_target(index, args.profile, _device_check(args))
        if index == "cpu":
            device = torch.device("cpu")
            local_processes = int(os.environ.get("LOCAL_WORLD_SIZE", world.size))
            torch.set_num_threads(max(1, usable_cpus() // local_processes))
        else:
            device = torch.device("cuda", distributed.cuda_index(int(index)))
            torch.cuda.set_device(device)
        settings = settings_from(args, target)
        describe = _describe(settings, gpus, world.size)
        started = _begin(args, target, gpus, describe) if world.leader else {}
        distributed.start(device)
        try:
            result = _train(args, settings, device, world)
        finally:
            distributed.stop()
    except BaseException as err:
        kind = "out of memory" if _out_of_memory(err) else type(err).__name__
        launch.file_failure(f"{kind}: {_first_line(err)}", world.rank)
        raise
    if world.leader:
        _publish(args, started, describe, result, target.profile["name"])
    return 0


def _train(args: argparse.Namespace, settings, device, world):  # -> loop.TrainResult
    from ..training.loop import train

    def ready() -> None:
        if args.ready_file and world.leader:
            args.ready_file.write_text("training\n")

    return train(settings, device, world, on_ready=ready, progress=not args.until_stopped)


def _begin(args: argparse.Namespace, target: Target, gpus, describe: dict[str, Any]) -> dict[str, Any]:
    extra = {"device_mismatch": target.device_mismatch, "workload": describe}
    return provenance.begin(
        [] if gpus == "cpu" else list(gpus), target.profile["name"], args.config_hash, extra
    )


def _publish(
    args: argparse.Namespace, started: dict[str, Any], describe: dict[str, Any], result, profile: str
) -> None:
    """Rank 0: the summary on stderr, the per-interval table with its sidecar in --out (or stdout)."""
    from ..training.summary import run_summary

    describe.update(data=result.data_name, image_size=result.image_size, num_classes=result.num_classes)
    summary = run_summary(result.rows, describe["world_size"])
    summary["parameter_checksums"] = result.parameter_checksums
    summary["parameters_equal_across_ranks"] = len(set(result.parameter_checksums)) == 1
    summary["stopped_by_signal"] = result.stopped_by_signal
    print(
        f"{describe['model']} {describe['precision']}, batch {describe['batch_per_gpu']} per GPU, "
        f"{describe['world_size']} process(es) on {describe['devices']}: "
        f"{summary['images_per_s']:,.1f} images/s ({summary['images_per_s_per_gpu']:,.1f} per GPU) over "
        f"{summary['timed_iterations']} iterations after {summary['warmup_iterations']} warm-up; "
        "parameters equal across ranks: "
        f"{summary['parameters_equal_across_ranks']}",
        file=sys.stderr,
    )
    if args.until_stopped:
        return
    table = result.rows.copy()
    for key, value in reversed({"profile": profile, **describe, "status": "ok"}.items()):
        table.insert(0, key, value)
    if args.out:
        write_raw(table, args.out, provenance.finish(started, {"training": summary}))
    else:
        table.to_csv(sys.stdout, index=False)


def _out_of_memory(err: BaseException) -> bool:
    """CUDA's out-of-memory error, or the CPU allocator's (a plain RuntimeError)."""
    import torch

    return isinstance(err, torch.OutOfMemoryError) or (
        isinstance(err, RuntimeError) and "can't allocate memory" in str(err)
    )


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else "(no message)"
