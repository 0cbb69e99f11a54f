"""One process of a ResNet-50 training run: its device, the process group where there are several, the
training, and (rank 0, or the only process) the table it publishes.

`gpurepro train` resolves the run once (options, the profile's defaults, the GPUs checked against the
profile) into a TrainJob. With one process it trains in its own process; with several, torchrun starts
each rank as `python -m gpurepro.training.rank JOB_FILE`, so a rank imports only the training it runs,
never the command line with its other subcommands and their libraries, and looks nothing up again. A
rank that fails files its reason for the launcher before it exits (torchrun itself only knows exit
codes).
"""

from __future__ import annotations

import os
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .. import provenance
from ..datasets.workers import usable_cpus
from ..errors import GpureproError
from ..point_failure import first_line
from ..results import write_raw
from . import distributed, failures
from .loop import TrainResult, TrainSettings, train
from .summary import run_summary


@dataclass(frozen=True)
class TrainJob:
    """A training run as the command resolved it: everything each of its processes needs."""

    settings: TrainSettings
    gpus: list[int] | str  # NVML indices, one per rank, or "cpu"
    profile: str  # the profile the result is filed under
    device_mismatch: str | None  # why the GPU is not the profile's model, when the user let it run anyway
    describe: dict[str, Any]  # the point's columns in the raw table
    config_hash: str
    out: Path | None  # the per-interval table rank 0 writes; None: stdout
    ready_file: Path | None  # written once the warm-up is done (the noise workload)
    until_stopped: bool  # the noise workload: trains until stopped, writes no table

    def save(self, path: Path) -> None:
        path.write_bytes(pickle.dumps(self))

    @staticmethod
    def load(path: Path) -> TrainJob:
        return pickle.loads(path.read_bytes())


def device_for(job: TrainJob, world: distributed.World) -> torch.device:
    """This process's device: its own GPU, or the CPU (shared out between the processes of this host)."""
    if job.gpus == "cpu":
        if distributed.under_torchrun():  # torchrun would give each process a single thread
            local_processes = int(os.environ.get("LOCAL_WORLD_SIZE", world.size))
            torch.set_num_threads(max(1, usable_cpus() // local_processes))
        return torch.device("cpu")
    index = job.gpus[world.local_rank]
    if not torch.cuda.is_available():
        raise GpureproError(f"NVML sees GPU {index}, but this torch has no CUDA ({torch.__version__})")
    device = torch.device("cuda", distributed.cuda_index(index))
    torch.cuda.set_device(device)
    return device


def begin(job: TrainJob) -> dict[str, Any]:
    """The provenance record at the start of training (the GPUs' state before the run warms them)."""
    extra = {"device_mismatch": job.device_mismatch, "workload": job.describe}
    gpus = [] if job.gpus == "cpu" else list(job.gpus)
    return provenance.begin(gpus, job.profile, job.config_hash, extra)


def train_job(job: TrainJob, device: torch.device, world: distributed.World) -> TrainResult:
    def ready() -> None:
        if job.ready_file and world.leader:
            job.ready_file.write_text("training\n")

    return train(job.settings, device, world, on_ready=ready, progress=not job.until_stopped)


def publish(job: TrainJob, started: dict[str, Any], result: TrainResult) -> None:
    """The summary on stderr, the per-interval table with its sidecar in the job's `out` (or stdout)."""
    describe = {
        **job.describe,
        "data": result.data_name,
        "image_size": result.image_size,
        "num_classes": result.num_classes,
    }
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
    if job.until_stopped:
        return
    table = result.rows.copy()
    for key, value in reversed({"profile": job.profile, **describe, "status": "ok"}.items()):
        table.insert(0, key, value)
    if job.out:
        write_raw(table, job.out, provenance.finish(started, {"training": summary}))
    else:
        table.to_csv(sys.stdout, index=False)


def run(job: TrainJob, world: distributed.World) -> None:
    """This rank's part of the run: join the process group, train, and publish on rank 0."""
    device = device_for(job, world)
    started = begin(job) if world.leader else {}
    distributed.start(device)
    try:
        result = train_job(job, device, world)
    finally:
        distributed.stop()
    if world.leader:
        publish(job, started, result)


def out_of_memory(err: BaseException) -> bool:
    """CUDA's out-of-memory error, or the CPU allocator's (a plain RuntimeError)."""
    return isinstance(err, torch.OutOfMemoryError) or (
        isinstance(err, RuntimeError) and "can't allocate memory" in str(err)
    )


def main(argv: list[str]) -> int:
    """A rank torchrun started for the launcher: any failure is filed (the launcher records the point as
    failed with it) before it propagates."""
    world = distributed.world_from_environment()
    try:
        run(TrainJob.load(Path(argv[0])), world)
    except BaseException as err:
        kind = "out of memory" if out_of_memory(err) else type(err).__name__
        failures.file_failure(f"{kind}: {first_line(err)}", world.rank)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
