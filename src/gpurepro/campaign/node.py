"""A node job: every selected GPU of this node measured at once, so no card meets a different neighbour,
heat or host load than the others.

For each run, one process per GPU (commands/campaign_worker.py, started by spawn) is given only its own
GPU through CUDA_VISIBLE_DEVICES (its UUID), so each process times on its GPU and makes no context on
another; it keeps the host's NVML index for telemetry and its records. The processes meet at a barrier
once their imports are done and start `gpurepro sgemm` together, each with the same backend, N and reps;
the time each was let go is recorded, and each process's raw file carries every process's start in its
provenance (`node_job`), so the node's start-time skew is read beside each GPU's reps. The next run
starts when every process of this one has ended; each run begins with the harness's cool-down
(telemetry.cooldown_max_wait_s), so runs follow each other cooled.

On the cpu profile, `stand_ins` processes measure the CPU side by side, each filed as a GPU of its own
(gpu0, gpu1, ...): the same code path, where a machine has no GPU.

The node's record (layout.py) names each GPU by the node's hostname, its NVML index, UUID, serial, PCI
bus id, VBIOS, power limit and driver. A GPU that is asked for and absent, a process that fails, is
killed or outlives the run's time limit, or a signal that ends the node job (signals.py) makes the
record `failed` with the reason; the job still ends well, so the campaign goes on with the other nodes,
and the next run tries this node again in a new attempt folder. Before it measures, the job notes where
and when it runs, its process and its SLURM job (job.json), so that a job ended before its record
(SIGKILL) can be recorded by the next run (unrecorded.py).

A study on one machine uses the same job for one run at a time (the variability study: one job per
backend and run, numbered by `first_run`), its records named apart (`record_prefix`) in the one folder
that holds its raw files.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import nvml
from . import layout, signals
from .signals import how_ended

# The per-GPU process's entry point, started by spawn with (argv, visible, log, barrier, starts, devices,
# key, timeout_s): commands/campaign_worker.measure, handed in by the command (it runs `gpurepro sgemm`).
Worker = Callable[..., None]

LOG_TAIL_CHARS = 600  # of a failed process's log, in the node's record
SLURM_JOB_ID = "SLURM_JOB_ID"  # set by SLURM in a job's environment


@dataclass(frozen=True)
class NodeJob:
    n: int
    reps: int
    runs: int
    backend: str
    gpus: list[int]  # NVML indices; empty on the cpu profile (stand-ins instead)
    out_dir: Path  # the attempt folder: raw files and node.json
    log_dir: Path
    stand_ins: int = 0  # processes measuring the CPU, on the cpu profile
    sgemm_args: list[str] = field(default_factory=list)  # further options of `gpurepro sgemm`
    barrier_timeout_s: float = 600.0
    run_timeout_s: float | None = None  # a run's processes still running then are stopped, and named
    first_run: int = 1  # the number of its first run: a study measuring one run a job numbers them
    record_prefix: str = ""  # <prefix>node.json, <prefix>job.json: several jobs' records in one folder

    @property
    def devices(self) -> list[str]:
        """How each process's files name its device: the NVML index, or the stand-in's number."""
        return [str(g) for g in self.gpus] if self.gpus else [str(k) for k in range(self.stand_ins)]

    @property
    def run_numbers(self) -> range:
        return range(self.first_run, self.first_run + self.runs)

    @property
    def record_name(self) -> str:
        return self.record_prefix + layout.NODE_RECORD

    @property
    def job_name(self) -> str:
        return self.record_prefix + layout.JOB_RECORD


def _vbios(index: int) -> str | None:
    import pynvml

    return nvml.optional(lambda: pynvml.nvmlDeviceGetVbiosVersion(nvml.handle(index)))


def identities(job: NodeJob, hostname: str) -> list[dict[str, Any]]:
    """Each GPU's identity (raises NvmlUnavailable or an NVML error for a GPU that is not there)."""
    if not job.gpus:
        # named 'cpu', as every table names the CPU, so that the verdict counts no GPU here
        return [{"index": k, "uuid": f"cpu-{hostname}-{k}", "name": "cpu", "stand_in": True}
                for k in range(job.stand_ins)]  # fmt: skip
    found = []
    with nvml.session():
        count = nvml.device_count()
        for index in job.gpus:
            if index >= count:
                raise LookupError(f"GPU {index} is not on this node: NVML finds {count} GPU(s)")
            info = nvml.gpu_info(index).as_dict()
            found.append({**info, "index": index, "vbios": _vbios(index)})
    return found


def _argv(job: NodeJob, device: str, run: int) -> list[str]:
    table = job.out_dir / layout.raw_name(job.backend, device, run)
    gpu = device if job.gpus else "cpu"
    trace = table.with_suffix(".telemetry.csv")
    return ["sgemm", str(job.n), str(job.reps), gpu, "--backend", job.backend, "--run", str(run),
            "--out", str(table), "--trace-out", str(trace), *job.sgemm_args]  # fmt: skip


def _log_tail(path: Path) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-LOG_TAIL_CHARS:].strip()


def run_together(
    job: NodeJob, run: int, gpus: list[dict[str, Any]], worker: Worker
) -> tuple[dict[str, float], list[str]]:
    """One run on every device at once: the time each process left the barrier, and why any failed."""
    context = multiprocessing.get_context("spawn")
    # each process's start, in the device's place (NaN until it leaves the barrier): shared, so that each
    # can file every start in its provenance, and read here once they have ended
    barrier, starts = context.Barrier(len(job.devices)), context.Array("d", [math.nan] * len(job.devices))
    processes = {}
    for device, gpu in zip(job.devices, gpus, strict=True):
        log = job.log_dir / f"gpu{device}_run{run}.log"
        visible = gpu["uuid"] if job.gpus else None
        args = (_argv(job, device, run), visible, str(log), barrier, starts, job.devices, device,
                job.barrier_timeout_s)  # fmt: skip
        processes[device] = (context.Process(target=worker, args=args), log)
    deadline = time.monotonic() + job.run_timeout_s if job.run_timeout_s else None
    try:
        for process, _ in processes.values():
            process.start()
        for process, _ in processes.values():
            process.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    finally:  # the node job killed (signals.Killed), or a run past its time limit: no process outlives it
        late = {device for device, (process, _) in processes.items() if process.is_alive()}
        signals.stop(process for process, _ in processes.values())
    times = {device: at for device, at in zip(job.devices, starts[:], strict=True) if not math.isnan(at)}
    stopped = f"did not end within {job.run_timeout_s or 0:g} s: stopped"
    failures = [
        f"device {device} run {run} {stopped if device in late else how_ended(process.exitcode)}: "
        + _log_tail(log)
        for device, (process, log) in processes.items()
        if process.exitcode != 0 or device in late
    ]
    return times, failures


def measure_node(job: NodeJob, worker: Worker) -> dict[str, Any]:
    """Measure the node, one `worker` process per device a run, write its record, and return it. A
    signal that ends the job (SLURM's time limit or scancel, Ctrl-C) stops the runs and is recorded."""
    hostname = socket.gethostname()
    job.out_dir.mkdir(parents=True, exist_ok=True)
    job.log_dir.mkdir(parents=True, exist_ok=True)
    layout.write_job(job.out_dir, _started(hostname), job.job_name)
    settings = {"n": job.n, "reps": job.reps, "runs": job.runs, "first_run": job.first_run,
                "backend": job.backend, "sgemm_args": job.sgemm_args}  # fmt: skip
    record: dict[str, Any] = {"hostname": hostname, "settings": settings, "gpus": [], "runs": []}
    with signals.caught():
        try:
            return _measure(job, worker, record)
        except signals.Killed as killed:
            written = layout.read_record(job.out_dir, job.record_name)
            if written is not None:  # killed as it wrote its record: the record stands
                return written
            return _write(job, {**record, "status": "failed", "reason": _killed(job, record, killed)})


def _killed(job: NodeJob, record: dict[str, Any], killed: signals.Killed) -> str:
    last = job.run_numbers[-1]
    run = min(job.first_run + len(record["runs"]), last)
    reason = f"the node job was killed by {killed} during run {run} of {last}"
    slurm = os.environ.get(SLURM_JOB_ID)
    if slurm:
        reason += f" (SLURM job {slurm}; SLURM sends SIGTERM at a job's time limit and on scancel)"
    return reason


def _started(hostname: str) -> dict[str, Any]:
    """What the next run needs to tell how this job ended, should it end before its record: where and
    when it ran, its process, and its SLURM job."""
    return {"hostname": hostname, "pid": os.getpid(), "started": time.time(),
            "slurm_job_id": os.environ.get(SLURM_JOB_ID)}  # fmt: skip


def _measure(job: NodeJob, worker: Worker, record: dict[str, Any]) -> dict[str, Any]:
    try:
        gpus = identities(job, record["hostname"])
    except Exception as err:  # NVML's errors are many classes: each means a GPU asked for is not there
        return _write(job, {**record, "status": "failed", "reason": f"GPUs {job.gpus}: {err}"})
    record["gpus"] = gpus
    hostname = record["hostname"]
    for run in job.run_numbers:
        print(
            f"run {run}/{job.run_numbers[-1]}: {len(gpus)} device(s) at once on {hostname}", file=sys.stderr
        )
        times, failures = run_together(job, run, gpus, worker)
        skew = max(times.values()) - min(times.values()) if times else float("nan")
        record["runs"].append({"run": run, "start_times": times, "start_skew_s": skew})
        for gpu, device in zip(gpus, job.devices, strict=True):
            gpu.setdefault("start_time", times.get(device))
            gpu.setdefault("start_times", []).append(times.get(device))
        if failures:
            return _write(job, {**record, "status": "failed", "reason": "; ".join(failures)})
    return _write(job, {**record, "status": "measured", "reason": ""})


def _write(job: NodeJob, record: dict[str, Any]) -> dict[str, Any]:
    record["recorded"] = time.time()
    layout.write_record(job.out_dir, record, job.record_name)
    print(f"node {record['hostname']}: {record['status']} {record['reason']}".strip(), file=sys.stderr)
    return record
