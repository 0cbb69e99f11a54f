"""The B processes of `concurrent` and `mps`: started together, each trains one model, and all begin
their timed steps at one barrier, so the measured window is B models sharing the GPU.

Each process runs `gpurepro.hfta_study.worker` from a fresh interpreter, or forked from the run's fork
server (gpurepro.forkserver), never from this process (a forked CUDA context is unusable), nor through
multiprocessing's spawn, which re-runs the parent's main script, the whole command line, in every
process. It inherits the environment, which is how the MPS daemon's pipe directory reaches it, and talks
to the launcher over a pipe of its own: its settings in, `ready` after its warm-up, the start signal back
once all B are ready (the barrier), its result or failure out. A process that fails before the barrier
breaks it, so the others stop waiting; the first failure decides the point's status (an out-of-memory
error anywhere makes it `oom`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

import torch

from .. import host
from ..point_failure import PointFailed
from . import training

# Through the run's fork server where there is one (forked in milliseconds, not seconds of imports each).
WORKER_START = "gpurepro.forkserver.client"
WORKER_ENTRY = "gpurepro.hfta_study.worker:main"
# Each worker starts through this, which puts it on the job's CPUs (see _start).
PIN_ENTRY = "gpurepro.host:run_inheriting_pin"
# What the launcher sends a ready process: start the timed steps, or give up (another process failed).
START, ABORT = "start", "abort"


class PointOutcome(Exception):
    """The point is not measured: status `oom`, `failed` or `skipped`, with the reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def classify(err: BaseException) -> PointOutcome:
    """oom for any out-of-memory error (CUDA's, or the CPU allocator's), failed for the rest."""
    first = (str(err).strip().splitlines() or [""])[0][:300]
    if isinstance(err, torch.OutOfMemoryError) or "can't allocate memory" in first:
        return PointOutcome("oom", f"out of memory: {first}")
    if isinstance(err, PointFailed):
        return PointOutcome("failed", first)
    if isinstance(err, threading.BrokenBarrierError):
        return PointOutcome("failed", "another process failed before the timed steps")
    return PointOutcome("failed", f"{type(err).__name__}: {first}")


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen
    pipe: Connection
    ready: bool = False


def _start(settings: training.TrainSettings, index: int, env: Mapping[str, str]) -> _Worker:
    """Process `index`, given its settings through its end of a new pipe."""
    ours, theirs = multiprocessing.Pipe()
    # A pinned job's workers run on its CPUs however they start: a fresh interpreter inherits them, and one
    # forked from the fork server (the server's child, with the server's CPUs) is handed them through the
    # environment. Each gets the job's whole CPU set, never a slice of it: B=32 workers on a GPU's 16
    # CPUs share all 16 as the OS schedules them rather than crowd onto one CPU each, and that set is
    # never fewer CPUs than the job's threads (host.pin_for_gpu).
    inherited = {k: v for k, v in os.environ.items() if k != host.PINNED_CPUS_VAR}
    with theirs:
        fd = theirs.fileno()
        process = subprocess.Popen(
            [sys.executable, "-m", WORKER_START, f"--pass-fd={fd}", PIN_ENTRY, WORKER_ENTRY, str(fd)],
            pass_fds=[fd],
            env={**inherited, **host.inherited_environment(), **env},
        )
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # dead already: _collect says so
        ours.send((settings, index))
    return _Worker(index, process, ours)


def _stop(worker: _Worker) -> None:
    """Wait for a process to leave after its report, killing it if it does not."""
    worker.pipe.close()
    try:
        worker.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        worker.process.kill()
        worker.process.wait()


def _collect(workers: list[_Worker], timeout_s: float) -> list[tuple[int, str, Any]]:
    """Every process's (index, status, payload) in the order they reported. All start their timed steps
    when the last is ready; once one fails before that, each is told to give up instead."""
    count, reports = len(workers), []
    started = aborted = False
    waiting = {worker.pipe: worker for worker in workers}
    deadline = time.monotonic() + timeout_s
    while waiting:
        if time.monotonic() > deadline:
            raise PointOutcome("failed", f"processes did not finish within {timeout_s:.0f} s")
        for pipe in wait(list(waiting), timeout=1.0):
            worker = waiting[pipe]
            try:
                status, payload = pipe.recv()
            except (EOFError, ConnectionError):  # killed from outside (the OOM killer, a signal), or crashed
                code = worker.process.wait()
                raise PointOutcome(
                    "failed", f"process {worker.index} of {count} exited with code {code} without reporting"
                ) from None
            if status == "ready":
                worker.ready = True
                if aborted:
                    pipe.send(ABORT)
                elif all(w.ready for w in workers):
                    started = True
                    for w in workers:
                        w.pipe.send(START)
                continue
            del waiting[pipe]
            reports.append((worker.index, status, payload))
            if status != "ok" and not (started or aborted):
                aborted = True
                for w in workers:
                    if w.ready:
                        w.pipe.send(ABORT)
    return reports


def run_processes(
    settings: training.TrainSettings,
    count: int,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 3600,
) -> list[dict[str, Any]]:
    """Train models 0..count-1 in `count` processes at once; their rows, or PointOutcome on a failure."""
    workers: list[_Worker] = []
    try:
        for index in range(count):
            workers.append(_start(settings, index, env or {}))
        reports = _collect(workers, timeout_s)
    except BaseException:
        for worker in workers:  # given up on (a failure, the time limit, Ctrl-C): nothing left to wait for
            worker.process.kill()
        raise
    finally:
        for worker in workers:
            _stop(worker)
    failures = [report for report in reports if report[1] != "ok"]
    if failures:
        # Out of memory anywhere decides the point; else the first to fail, which the others followed.
        index, status, payload = next((f for f in failures if f[1] == "oom"), failures[0])
        print(f"process {index} failed:\n{payload}", file=sys.stderr)
        reason = str(payload).splitlines()[0]
        raise PointOutcome(status, f"process {index} of {count}: {reason}")
    return [payload for _, _, payload in sorted(reports, key=lambda report: report[0])]
