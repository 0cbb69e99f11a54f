"""Aggregate raw inference files into a tidy long table: one row per (point, metric, statistic).

A point is (model, sequence length for BERT, batch size, precision, mode, run); its rows also carry
`cast_protocol` (how weights were cast under autocast, inference/modes.py; empty for files older than
it). Latency statistics are over the Timer's blocks (each a mean of back-to-back inferences; see
measure.py); energy comes from the sidecar's energy window, throttle reasons from the reps and from the
samples of the energy window in the trace saved beside the raw file. A failed point keeps one row, with
its status and reason.

Power is reported above two rests: the idle before the CUDA context existed (`power_above_idle`, as the
published artifacts report it) and the active idle, with the model built and warm in a live context
(`power_above_active_idle`): on an H100 the context alone holds about 55 W above true idle. The interval
of the latter is a bootstrap over 0.5 s sub-windows of both windows, read from the trace's energy
counter, around the whole windows' difference. Once every process of a point is in, each process's power
above active idle is also given at the point's median pace (pace.py: statistic `at_median_pace`), the
reading the power claims take. Files written before the active idle existed still
aggregate, with NaN in its rows.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..nvml import THROTTLE_MASK, describe_reasons
from ..results import read_raw, read_sidecar
from ..stats import difference_interval
from ..tables import describe, long_frame, point_keys, single
from ..telemetry.energy import subwindow_powers
from . import pace

POINT_KEYS = ["family", "model", "seq_len", "batch_size", "precision", "mode", "run"]
# A point over its processes (process_table): its keys without the run, and the GPU model that measured
# it (pooled across cards: the row lists the device indices, process_table.devices_of).
PROCESS_KEYS = ["study", "profile", "gpu_name", *POINT_KEYS[:-1], "cast_protocol"]
MODEL_ORDER = ["deit-t", "deit-s", "deit-b", "bert-b", "bert-l"]
PRECISION_ORDER = ["fp32", "tf32", "fp16", "bf16"]
MODE_ORDER = ["eager", "compile", "cudagraph"]
# Sub-windows of the energy and active-idle windows whose powers give power_above_active_idle its interval:
# five updates of NVML's energy counter (about every 100 ms) each.
SUBWINDOW_S = 0.5
# Medians per window in the sidecar (harness.WINDOW_MEDIANS): (metric, sidecar name, unit).
WINDOW_MEDIAN_METRICS = [
    ("sm_clock", "sm_clock_mhz", "MHz"),
    ("memory_clock", "memory_clock_mhz", "MHz"),
    ("gpu_utilization", "utilization_pct", "%"),
]
# The sidecar's windows and the statistic names of their medians.
WINDOW_STATISTICS = {
    "idle": "idle_median",
    "active_idle": "active_idle_median",
    "energy": "energy_window_median",
}


def trace_path(raw: Path | str) -> Path:
    """`x.csv` -> `x.telemetry.csv`, the trace the same job wrote (workflow/rules/common.smk raw_outputs)."""
    raw = Path(raw)
    return raw.with_name(f"{raw.stem}.telemetry.csv")


def _read_trace(raw: Path | str) -> pd.DataFrame:
    """The trace beside a raw file; empty where there is none."""
    path = trace_path(raw)
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def _energy_window_reasons(trace: pd.DataFrame, device: str) -> tuple[list[str], float]:
    """Clock-event reasons seen in the energy window's samples, and the fraction of them throttled."""
    if trace.empty or "phase" not in trace:
        return [], math.nan
    window = trace[(trace["phase"] == "energy") & (trace["device"].astype(str) == device)]
    masks = window["clock_event_reasons"].dropna().astype(int)
    if masks.empty:
        return [], math.nan
    seen = int(np.bitwise_or.reduce(masks.to_numpy()))
    throttled = float(((masks & THROTTLE_MASK) != 0).mean())
    return [r for r in describe_reasons(seen).split("|") if r], throttled


def _reasons_of_reps(reps: pd.DataFrame) -> list[str]:
    names = reps.get("clock_event_names", pd.Series(dtype=str)).dropna()
    return sorted({r for value in names for r in str(value).split("|") if r and r != "unknown"})


def _keys(reps: pd.DataFrame, sidecar: dict[str, Any], path: Path | str) -> dict[str, Any]:
    return point_keys("inference", reps, sidecar, path, [*POINT_KEYS, "cast_protocol"])


def _window_powers(trace: pd.DataFrame, device: str, window: dict[str, Any]) -> np.ndarray:
    """Powers of the window's whole sub-windows; empty without counter readings or window bounds."""
    start, end = window.get("start_unix_s", math.nan), window.get("end_unix_s", math.nan)
    if trace.empty or "energy_j" not in trace or not (math.isfinite(start) and math.isfinite(end)):
        return np.empty(0)
    return subwindow_powers(trace, device, start, end, SUBWINDOW_S)


def _active_idle_rows(
    trace: pd.DataFrame, device: str, energy: dict[str, Any], active: dict[str, Any], batch: int
) -> list[dict[str, Any]]:
    """Active-idle power, the energy window's power above it with its sub-window interval, and the energy
    per inference and per sample above it (NaN where the sidecar has no active idle or no energy)."""
    power = active.get("power_w", math.nan)
    mean = energy.get("avg_power_w", math.nan) - power
    interval = difference_interval(
        _window_powers(trace, device, energy), _window_powers(trace, device, active)
    )
    # The bootstrap over sub-windows gives the spread; the counter read at the whole windows' bounds gives
    # the point. The sub-windows interpolate the sampled counter (it steps about every 100 ms) and leave a
    # last partial one out, so their own mean can sit a few W off the point (2.5 W for DeiT-B eager on an
    # H100): the interval keeps its bootstrap offsets around the point, so it always holds it.
    per_op = energy.get("energy_per_op_above_active_idle_j", math.nan)
    return [
        single("active_idle_power", power, "W"),
        single("power_above_active_idle", mean, "W", "mean"),
        single("power_above_active_idle", mean - (interval.value - interval.low), "W", "ci_low"),
        single("power_above_active_idle", mean + (interval.high - interval.value), "W", "ci_high"),
        single("energy_per_inference", per_op, "J", "above_active_idle"),
        single("energy_per_sample", per_op / batch, "J", "above_active_idle"),
    ]


def _window_median_rows(medians: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Median SM clock, memory clock and utilisation of the idle, active-idle and energy windows."""
    return [
        single(metric, medians.get(window, {}).get(name, math.nan), unit, statistic)
        for metric, name, unit in WINDOW_MEDIAN_METRICS
        for window, statistic in WINDOW_STATISTICS.items()
    ]


def summarise_file(path: Path | str) -> pd.DataFrame:
    reps = read_raw(path)
    sidecar = read_sidecar(path)
    keys = _keys(reps, sidecar, path)
    if keys["status"] != "ok":
        return long_frame(keys, [single("latency", math.nan, "ms", "median")])
    batch = int(keys["batch_size"])
    rows = describe(reps["ms"], "latency", "ms")
    rows.append(single("runs_per_block", float(reps["runs"].iloc[0]), "runs"))
    rows.append(single("timed_inferences", float(reps["runs"].sum()), "runs"))
    rows.append(single("throughput", batch / (float(reps["ms"].median()) / 1e3), "samples/s", "median"))
    rows.append(single("parameters", float(reps["parameters"].iloc[0]), "1"))
    rows.append(
        single("output_max_abs_diff_vs_eager", float(reps["output_max_abs_diff_vs_eager"].max()), "1")
    )
    rows += describe(reps["power_w_median"], "power_during_latency", "W")[:1]
    rows.append(single("throttled_blocks", float(reps["throttled"].sum()), "blocks"))
    reasons = _reasons_of_reps(reps)
    rows.append(single("clock_event_reasons_latency", float(len(reasons)), "|".join(reasons) or "none"))

    measurement = sidecar.get("measurement", {})
    trace = _read_trace(path)
    idle = measurement.get("idle", {}).get(keys["device"], {})
    rows.append(single("idle_power", idle.get("power_w", math.nan), "W"))
    energy = measurement.get("energy", {}).get(keys["device"])
    keys["energy_method"] = energy["method"] if energy else "unavailable"
    if energy:
        per_op, above = energy["energy_per_op_j"], energy["energy_per_op_above_idle_j"]
        rows.append(single("energy_window", energy["duration_s"], "s"))
        rows.append(single("energy_window_inferences", float(energy["operations"]), "runs"))
        rows.append(single("energy_window_reliable", float(energy["reliable"]), "bool"))
        rows.append(single("energy_window_power", energy["avg_power_w"], "W", "mean"))
        # what inference adds to the idle draw, as the published artifacts report power: the energy
        # window's average power (NVML's energy counter) less the idle baseline before the model existed
        above_idle = energy["avg_power_w"] - idle.get("power_w", math.nan)
        rows.append(single("power_above_idle", above_idle, "W", "mean"))
    else:
        per_op = above = math.nan
    rows.append(single("energy_per_inference", per_op, "J", "gross"))
    rows.append(single("energy_per_inference", above, "J", "above_idle"))
    rows.append(single("energy_per_sample", per_op / batch, "J", "gross"))
    rows.append(single("energy_per_sample", above / batch, "J", "above_idle"))
    active = measurement.get("active_idle", {}).get(keys["device"], {})
    rows += _active_idle_rows(trace, keys["device"], energy or {}, active, batch)
    rows += _window_median_rows(measurement.get("window_medians", {}).get(keys["device"], {}))
    window_reasons, throttled = _energy_window_reasons(trace, keys["device"])
    rows.append(single("throttled_samples_energy_window", throttled, "fraction"))
    rows.append(
        single(
            "clock_event_reasons_energy_window",
            float(len(window_reasons)),
            "|".join(window_reasons) or "none",
        )
    )
    rows.append(single("telemetry_rate", measurement.get("telemetry", {}).get("achieved_rate_hz"), "Hz"))
    return long_frame(keys, rows)


def summarise(paths: list[str]) -> pd.DataFrame:
    table = pd.concat([summarise_file(p) for p in paths], ignore_index=True)
    if "energy_method" not in table:
        table["energy_method"] = None
    table = pd.concat([table, pace.rows_at_median_pace(table, PROCESS_KEYS)], ignore_index=True)
    order = {
        "model": {m: i for i, m in enumerate(MODEL_ORDER)},
        "precision": {p: i for i, p in enumerate(PRECISION_ORDER)},
        "mode": {m: i for i, m in enumerate(MODE_ORDER)},
    }

    def sort_key(column: pd.Series) -> pd.Series:
        return column.map(order[column.name]) if column.name in order else column

    columns = [c for c in ["model", "seq_len", "batch_size", "precision", "mode", "run"] if c in table]
    return table.sort_values(columns, key=sort_key, kind="stable").reset_index(drop=True)
