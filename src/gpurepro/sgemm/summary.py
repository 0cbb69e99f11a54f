"""Aggregate raw SGEMM files (one row per rep, plus provenance sidecars) into a tidy long table.

Beside each point's own statistics, its rate against the best size of its sweep (same GPU and backend):
the original study chose N=25536 as the size of maximum compute utilisation, which holds where that size's
rate sits on the sweep's plateau, its ratio to the best size's rate resolved from 1 or not.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..results import read_raw, read_sidecar
from ..tables import describe, long_frame, single
from ..telemetry.align import REP_TELEMETRY_METRICS

# Per rep: the timing and the telemetry attached to it (column in the raw file, metric name, unit).
REP_METRICS = [("ms", "time", "ms"), ("tflops", "rate", "TFLOP/s"), *REP_TELEMETRY_METRICS]
SWEEP_KEYS = ("profile", "device", "gpu_uuid", "backend")  # one sweep over sizes: a GPU and a backend
Point = tuple[dict[str, Any], pd.DataFrame, dict[str, Any]]  # a raw file: its keys, reps and sidecar
Rows = list[dict[str, Any]]


def read_point(path: Path | str) -> Point:
    """One raw file: its key columns, its reps and its provenance sidecar."""
    reps = read_raw(path)
    sidecar = read_sidecar(path)
    gpu = (sidecar.get("gpus") or [{}])[0]
    first = reps.iloc[0]
    keys = {
        "study": "sgemm",
        "profile": first["profile"],
        "device": str(first["device"]),
        "gpu_name": gpu.get("name", "cpu"),
        "gpu_uuid": gpu.get("uuid"),
        "backend": first["backend"],
        "n": int(first["n"]),
        "source_file": Path(path).name,
    }
    return keys, reps, sidecar


def point_rows(keys: dict[str, Any], reps: pd.DataFrame, sidecar: dict[str, Any]) -> Rows:
    """The point's statistics over its reps, and its measurement conditions from the sidecar."""
    rows = []
    for column, metric, unit in REP_METRICS:
        rows += describe(reps[column], metric, unit)
    rows.append(single("throttled_reps", float(reps["throttled"].sum()), "reps"))
    rows.append(single("verify_rel_err", float(reps["verify_rel_err"].max()), "1", "max"))
    measurement = sidecar.get("measurement", {})
    idle = measurement.get("idle", {}).get(keys["device"], {})
    rows.append(single("idle_power", idle.get("power_w", float("nan")), "W"))
    energy = measurement.get("energy", {}).get(keys["device"])
    if energy:
        rows.append(single("energy_per_op", energy["energy_per_op_j"], "J", "gross"))
        rows.append(single("energy_per_op", energy["energy_per_op_above_idle_j"], "J", "above_idle"))
        rows.append(single("energy_window", energy["duration_s"], "s"))
        rows.append(single("energy_window_reliable", float(energy["reliable"]), "bool"))
        rows.append(single("energy_window_power", energy["avg_power_w"], "W", "mean"))
    rows.append(single("telemetry_rate", measurement.get("telemetry", {}).get("achieved_rate_hz"), "Hz"))
    return rows


def _rate_vs_best(rates: pd.Series, best: pd.Series | None) -> Rows:
    """median, ci_low and ci_high of a point's rate over the best size's. The best size against itself
    is 1 by definition, and an interval of its reps against themselves would be a tautology, not a
    measurement: its bounds are NaN (how far the runner-up trails it is that point's own interval)."""
    interval = stats.Interval(1.0, math.nan, math.nan) if best is None else stats.ratio_interval(rates, best)
    return [
        single("rate_vs_sweep_best", value, "1", statistic)
        for statistic, value in (
            ("median", interval.value),
            ("ci_low", interval.low),
            ("ci_high", interval.high),
        )
    ]


def plateau_rows(points: list[Point]) -> dict[int, Rows]:
    """rate_vs_sweep_best rows, by the point's index in `points`, for every sweep of two or more sizes."""
    sweeps: dict[tuple, list[int]] = defaultdict(list)
    for index, (keys, _, _) in enumerate(points):
        sweeps[tuple(str(keys[key]) for key in SWEEP_KEYS)].append(index)
    rows: dict[int, Rows] = {}
    for members in sweeps.values():
        if len({points[index][0]["n"] for index in members}) < 2:
            continue
        rates = {index: points[index][1]["tflops"] for index in members}
        # a point without a rate (every rep NaN) is never the best
        best = max(members, key=lambda index: np.nan_to_num(rates[index].median(), nan=-math.inf))
        for index in members:
            rows[index] = _rate_vs_best(rates[index], None if index == best else rates[best])
    return rows


def summarise(paths: list[str]) -> pd.DataFrame:
    points = [read_point(p) for p in paths]
    plateau = plateau_rows(points)
    frames = [
        long_frame(keys, point_rows(keys, reps, sidecar) + plateau.get(index, []))
        for index, (keys, reps, sidecar) in enumerate(points)
    ]
    return pd.concat(frames, ignore_index=True).sort_values(["backend", "n"], kind="stable")
