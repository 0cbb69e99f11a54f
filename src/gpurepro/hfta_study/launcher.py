"""The B processes of `concurrent` and `mps`: started together, each trains one model, and all begin
their timed steps at one barrier, so the measured window is B models sharing the GPU.

Processes are spawned (not forked: a forked CUDA context is unusable) and inherit the environment at
start, which is how the MPS daemon's pipe directory reaches them. A process that fails before the
barrier breaks it, so the others stop waiting; the first failure decides the point's status (an
out-of-memory error anywhere makes it `oom`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any

import torch

from ..inference.modes import PointFailed
from . import training


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


def _worker(settings: training.TrainSettings, index: int, barrier: Any, results: Any) -> None:
    """One process: train model `index`; report its result or why it failed (never raise)."""
    try:
        training.prepare_process(settings)
        results.put(("ok", index, training.train_single(settings, index, barrier).row()))
    except BaseException as err:  # noqa: BLE001 - every failure is reported to the parent
        barrier.abort()
        outcome = classify(err)
        results.put((outcome.status, index, f"{outcome.reason}\n{traceback.format_exc()[-1500:]}"))


@contextmanager
def _environment(extra: Mapping[str, str]):
    """Extra environment variables while processes are spawned (they copy the parent's environment)."""
    saved = {key: os.environ.get(key) for key in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_processes(
    settings: training.TrainSettings,
    count: int,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 3600,
) -> list[dict[str, Any]]:
    """Train models 0..count-1 in `count` processes at once; their rows, or PointOutcome on a failure."""
    context = mp.get_context("spawn")
    barrier = context.Barrier(count)
    results = context.Queue()
    with _environment(env or {}):
        processes = [
            context.Process(
                target=_worker, args=(settings, index, barrier, results), name=f"hfta-worker-{index}"
            )
            for index in range(count)
        ]
        for process in processes:
            process.start()
    reports: dict[int, tuple[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(reports) < count:
            try:
                status, index, payload = results.get(timeout=1.0)
                reports[index] = (status, payload)
                continue
            except queue.Empty:
                pass
            silent = [p for i, p in enumerate(processes) if i not in reports and p.exitcode is not None]
            if silent or time.monotonic() > deadline:
                # A process killed from outside (the kernel's OOM killer, a signal) reports nothing.
                barrier.abort()
                why = (
                    f"process {silent[0].name} exited with code {silent[0].exitcode} without reporting"
                    if silent
                    else f"processes did not finish within {timeout_s:.0f} s"
                )
                raise PointOutcome("failed", why)
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
    failures = [
        (index, status, payload) for index, (status, payload) in sorted(reports.items()) if status != "ok"
    ]
    if failures:
        # Out of memory anywhere decides the point; the others then failed only because of it.
        index, status, payload = next((f for f in failures if f[1] == "oom"), failures[0])
        print(f"process {index} failed:\n{payload}", file=sys.stderr)
        reason = str(payload).splitlines()[0]
        raise PointOutcome(status, f"process {index} of {count}: {reason}")
    return [payload for _, (_, payload) in sorted(reports.items())]
