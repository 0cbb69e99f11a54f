"""Attach telemetry to repetitions: per rep, the median power, clocks and temperature sampled while it ran,
and every clock-event (throttle) reason seen, so a throttled rep can be told apart from a slow GPU."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..nvml import THROTTLE_MASK, describe_reasons

# The per-rep telemetry columns attach() adds that summaries report: (column, metric name, unit).
REP_TELEMETRY_METRICS = [
    ("power_w_median", "power", "W"),
    ("sm_clock_mhz_median", "sm_clock", "MHz"),
    ("temperature_c_median", "temperature", "C"),
]
MIN_REP_ENERGY_S = 1.0
MEDIAN_COLUMNS = ["power_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c", "util_pct"]


def _reasons(values: pd.Series) -> float:
    known = values.dropna().astype(int)
    return float(np.bitwise_or.reduce(known.to_numpy())) if len(known) else math.nan


def _energy_per_rep(reps: pd.DataFrame, samples: pd.DataFrame) -> np.ndarray:
    """Rise of the energy counter over each rep, interpolated between samples. The counter updates about
    every 100 ms, so only reps of a second or more get a trustworthy value; shorter ones are NaN."""
    known = samples[samples["energy_j"].notna()]
    if len(known) < 2:
        return np.full(len(reps), math.nan)
    times, energy = known["time_unix_s"].to_numpy(), known["energy_j"].to_numpy()
    start, end = reps["t_start_unix_s"].to_numpy(), reps["t_end_unix_s"].to_numpy()
    joules = np.interp(end, times, energy) - np.interp(start, times, energy)
    return np.where(end - start >= MIN_REP_ENERGY_S, joules, math.nan)


def attach(reps: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """Add per-rep telemetry columns to a table with t_start_unix_s / t_end_unix_s per row.

    A rep shorter than the sampling period may hold no sample; it takes the sample nearest its middle
    and `telemetry_samples` says 0, so short reps are not mistaken for directly observed ones.
    """
    out = reps.copy()
    times = samples["time_unix_s"].to_numpy()
    stats: dict[str, list[float]] = {f"{c}_median": [] for c in MEDIAN_COLUMNS}
    stats["clock_event_reasons"] = []
    counts = []
    for start, end in zip(reps["t_start_unix_s"], reps["t_end_unix_s"], strict=True):
        inside = samples[(times >= start) & (times <= end)]
        counts.append(len(inside))
        if inside.empty and len(samples):
            inside = samples.iloc[[int(np.argmin(np.abs(times - (start + end) / 2)))]]
        for column in MEDIAN_COLUMNS:
            stats[f"{column}_median"].append(float(inside[column].median()) if len(inside) else math.nan)
        stats["clock_event_reasons"].append(
            _reasons(inside["clock_event_reasons"]) if len(inside) else math.nan
        )
    for column, values in stats.items():
        out[column] = values
    out["telemetry_samples"] = counts
    out["energy_j"] = _energy_per_rep(reps, samples)
    reasons = out["clock_event_reasons"]
    out["throttled"] = [(not math.isnan(r)) and bool(int(r) & THROTTLE_MASK) for r in reasons]
    out["clock_event_names"] = [describe_reasons(None if math.isnan(r) else int(r)) for r in reasons]
    return out
