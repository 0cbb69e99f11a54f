"""Running the training over several processes with torchrun, so that rules and users need no torchrun
command lines: `gpurepro train resnet50 --gpus 0,1` starts `python -m torch.distributed.run --standalone
--nproc-per-node 2 -m gpurepro.training.rank JOB_FILE` (the run the command resolved, see `rank`) with
only those GPUs visible, waits, and says why it failed when it did (each rank files its reason; torchrun
itself only knows exit codes)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..datasets.workers import usable_cpus
from .failures import FAILURE_DIR, first_failure
from .processes import background_process, sigterm_as_interrupt

if TYPE_CHECKING:
    from .rank import TrainJob

# The module each rank starts from (`gpurepro.training.rank`).
RANK = "gpurepro.training.rank"
# torchrun's own grace before it kills workers that ignore SIGTERM is 30 s; leave it that and more.
STOP_GRACE_S = 45.0


def torchrun_command(processes: int, job_file: Path) -> list[str]:
    """torchrun on this host: --standalone picks a free port, so jobs side by side do not collide."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
        "-m", RANK, str(job_file),
    ]  # fmt: skip


def worker_environment(gpus: list[int] | None, processes: int, failures: Path) -> dict[str, str]:
    """Only the run's GPUs visible (NVML's numbers: CUDA_DEVICE_ORDER=PCI_BUS_ID is set), and on the CPU
    the cores shared out between the processes (torchrun would give each a single thread)."""
    env = {**os.environ, FAILURE_DIR: str(failures)}
    env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    if gpus is None:
        env["OMP_NUM_THREADS"] = str(max(1, usable_cpus() // processes))
    else:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    return env


def run(processes: int, job: TrainJob) -> str | None:
    """Run `job` in `processes` ranks to the end. None when all succeeded, else why not. Interrupted
    (Ctrl-C, SIGTERM from Snakemake or a scheduler), torchrun and every rank are stopped before this
    returns."""
    with tempfile.TemporaryDirectory(prefix="gpurepro-train-") as folder:
        job_file = Path(folder) / "job.pickle"
        job.save(job_file)
        gpus = None if job.gpus == "cpu" else list(job.gpus)
        env = worker_environment(gpus, processes, Path(folder))
        command = torchrun_command(processes, job_file)
        print(f"launching: {' '.join(command)}", file=sys.stderr)
        with sigterm_as_interrupt(), background_process(command, STOP_GRACE_S, env=env) as process:
            status = process.wait()
        if status == 0:
            return None
        reason = first_failure(Path(folder))
        return reason or f"torchrun exited with status {status} (no rank said why; see the log)"
