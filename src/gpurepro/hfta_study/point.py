"""One sweep point (workload, mode, precision, B, repeat) as a harness workload, and the record of a point
that could not be measured (out of memory, failed, skipped).

Throughput is samples trained over wall time, warm-up excluded:
- serial: B x batch x steps over the sum of each model's own timed stretch (B jobs one after another;
  building the next model and its warm-up are not training time);
- hfta: the fused array's samples over its one timed stretch;
- concurrent, mps: all processes' samples over the window from the first process's first timed step to
  the last one's end (they start at one barrier).
Each raw row is one unit (a model, a process or the fused array) with its own bounds; the point's
throughput, wall time and process count are repeated on every row.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from .. import harness
from . import launcher, training
from .launcher import PointOutcome, classify
from .mps import MpsUnavailable, mps_daemon


@dataclass(frozen=True)
class Point:
    mode: str
    models: int  # B
    settings: training.TrainSettings
    gpu_index: int | None
    worker_timeout_s: float = 3600.0
    mps_binary: str | None = None  # nvidia-cuda-mps-control, for mode mps


def throughput(rows: pd.DataFrame, mode: str) -> tuple[float, float]:
    """(samples/s, wall seconds) of a point from its unit rows (see the module's docstring)."""
    if mode == "serial":
        wall = float((rows["t_end_unix_s"] - rows["t_start_unix_s"]).sum())
    else:
        wall = float(rows["t_end_unix_s"].max() - rows["t_start_unix_s"].min())
    return float(rows["samples"].sum()) / wall, wall


def _process_settings(point: Point) -> training.TrainSettings:
    """Each of the B processes on the CPU gets its share of the cores (on a GPU the default)."""
    if point.gpu_index is not None:
        return point.settings
    cores = len(os.sched_getaffinity(0))
    return replace(point.settings, threads=max(1, cores // point.models))


def _train(point: Point) -> list[dict[str, Any]]:
    if point.mode == "concurrent":
        return launcher.run_processes(
            _process_settings(point), point.models, timeout_s=point.worker_timeout_s
        )
    if point.mode == "mps":
        assert point.mps_binary is not None
        try:
            with mps_daemon(point.mps_binary) as env:
                return launcher.run_processes(
                    _process_settings(point), point.models, env, timeout_s=point.worker_timeout_s
                )
        except MpsUnavailable as why:
            raise PointOutcome("failed", str(why)) from None
    try:
        if point.mode == "serial":
            return [unit.row() for unit in training.train_serial(point.settings, point.models)]
        return [training.train_fused(point.settings, point.models).row()]
    except Exception as err:  # out of memory, divergence, a library error: this point only
        training.release_cached_memory(point.settings.device)
        raise classify(err) from err


def workload(point: Point) -> harness.Workload:
    """The harness workload of a point: training in timed_reps, energy over the span of its units."""

    def timed_reps() -> pd.DataFrame:
        if point.mode in ("serial", "hfta"):
            training.prepare_process(point.settings)  # processes of concurrent/mps prepare themselves
        rows = pd.DataFrame(_train(point))
        samples_per_s, wall = throughput(rows, point.mode)
        rows["throughput_samples_per_s"] = samples_per_s
        rows["wall_s"] = wall
        rows["processes"] = rows["pid"].nunique()
        rows["status"], rows["reason"] = "ok", ""
        print(
            f"{point.mode} B={point.models}: {samples_per_s:,.1f} samples/s over {wall:.2f} s "
            f"({int(rows['samples'].sum())} samples, {rows['processes'].iloc[0]} process(es))",
            file=sys.stderr,
        )
        return rows

    # No operation for a separate energy window: energy comes from the trace over the units' span.
    return harness.Workload(timed_reps, None, lambda: None)
