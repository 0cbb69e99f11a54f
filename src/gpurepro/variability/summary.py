"""Variability tables: every rep of every GPU and run in one tidy table, and the spread between GPUs.

The spread follows the original study: each GPU's median over its reps and runs, then across GPUs the
ratio of the slowest to the fastest (max/min) and the coefficient of variation, per metric. Each GPU's
rate is also given relative to the median GPU, and throttled reps are counted, not averaged away.

A difference between GPUs is read only where it exceeds the rep-to-rep noise (gpurepro.stats): beside
each spread, its 95% bootstrap interval over every GPU's reps of all its runs and the permutation p-value
of "the GPUs alike"; beside each GPU's rate relative to the median GPU, its interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..results import read_raw, read_sidecar
from ..sgemm.summary import REP_METRICS
from ..tables import single

# (column of the reps table, metric name, unit)
METRICS = [*REP_METRICS, ("energy_per_rep_j", "energy_per_rep", "J")]
# Columns measured once per run (an energy window of the run's sidecar), repeated on each of its reps: their
# sample is one value per run, or resampling would count one window as a hundred independent reps.
RUN_LEVEL = {"energy_per_rep_j"}
UNITS = {"spread_pct": "%", "spread_pct_ci_low": "%", "spread_pct_ci_high": "%"}  # else "1"


def read_reps(path: Path | str) -> pd.DataFrame:
    """One raw file's reps with the GPU's identity and the run's energy and idle power from its sidecar."""
    reps = read_raw(path)
    sidecar = read_sidecar(path)
    gpu = (sidecar.get("gpus") or [{}])[0]
    device = str(reps["device"].iloc[0])
    measurement = sidecar.get("measurement", {})
    energy = measurement.get("energy", {}).get(device, {})
    # measured by a node job (every GPU at once): when this GPU's process began and how far apart the
    # node's processes began (seconds; empty for a GPU measured by a job of its own); the device as the
    # job names it, which tells the cpu profile's stand-ins apart (each measured 'cpu')
    node = sidecar.get("node_job") or {}
    reps["device"] = str(node.get("device", device))
    reps["gpu_name"] = gpu.get("name", "cpu")
    reps["gpu_uuid"] = gpu.get("uuid")
    reps["gpu_serial"] = gpu.get("serial")
    reps["idle_power_w"] = measurement.get("idle", {}).get(device, {}).get("power_w")
    reps["energy_per_rep_j"] = energy.get("energy_per_op_j")
    reps["energy_per_rep_above_idle_j"] = energy.get("energy_per_op_above_idle_j")
    reps["cooldown_status"] = measurement.get("cooldown", {}).get("status")
    reps["start_time"] = node.get("start_time", np.nan)
    reps["start_skew_s"] = node.get("start_skew_s", np.nan)
    reps["source_file"] = Path(path).name
    return reps


def gpu_labels(reps: pd.DataFrame) -> pd.Series:
    """Which GPU each rep ran on: its index, or its index and UUID where one index names several GPUs
    (on a cluster every job measures GPU 0 of its own allocation, so only the UUID tells them apart)."""
    device = reps["device"].astype(str)
    identity = reps["gpu_uuid"].astype(object).where(reps["gpu_uuid"].notna(), device).astype(str)
    if (identity.groupby(device).nunique() <= 1).all():
        return device
    return device + " " + identity


def all_reps(paths: list[str]) -> pd.DataFrame:
    return pd.concat([read_reps(p) for p in paths], ignore_index=True)


def _spread(values: pd.Series) -> dict[str, float]:
    return {
        "max_over_min": float(values.max() / values.min()),
        "cv": float(values.std(ddof=0) / values.mean()),
        "spread_pct": float((values.max() - values.min()) / values.min() * 100),
    }


def _run_ids(reps: pd.DataFrame) -> pd.Series:
    """Which run each rep belongs to: its raw file (one GPU's run), or its run number in a table made
    without files."""
    return reps["source_file"] if "source_file" in reps else reps["run"]


def gpu_samples(group: pd.DataFrame, column: str) -> list[np.ndarray]:
    """Each GPU's values of one column, GPUs in label order: its reps over all its runs, or one value per
    run for a RUN_LEVEL column."""
    values = group[["gpu", column]].assign(run=_run_ids(group))
    if column in RUN_LEVEL:
        values = values.drop_duplicates(["gpu", "run"])
    return [gpu_values[column].to_numpy(float) for _, gpu_values in values.groupby("gpu", sort=True)]


def _resolution(samples: list[np.ndarray], resamples: int) -> dict[str, float]:
    """Whether the spread between GPUs exceeds their reps' noise: its interval, and the p-value of the
    GPUs being alike (all of them shuffled together, as picking the two extremes first makes alike
    GPUs look different)."""
    spread = stats.spread_pct_interval(samples, resamples=resamples)
    return {
        "spread_pct_ci_low": spread.low,
        "spread_pct_ci_high": spread.high,
        "p_value": stats.spread_p_value(samples, resamples=resamples),
    }


def _gpu_rows(
    scope: dict[str, Any],
    gpu_reps: pd.DataFrame,
    medians: pd.Series,
    median_rate: float,
    relative: stats.Interval,
) -> list[dict[str, Any]]:
    """One GPU's medians, its rate against the median GPU with its interval, and its reps' conditions."""
    rows = [single(metric, float(medians[column]), unit, "median") for column, metric, unit in METRICS]
    rows.append(single("rate_vs_median_gpu", float(medians["tflops"] / median_rate), "1"))
    rows.append(single("rate_vs_median_gpu", relative.low, "1", "ci_low"))
    rows.append(single("rate_vs_median_gpu", relative.high, "1", "ci_high"))
    rows.append(single("rep_cv", float(gpu_reps["ms"].std(ddof=0) / gpu_reps["ms"].mean()), "1"))
    rows.append(single("throttled_reps", float(gpu_reps["throttled"].sum()), "reps"))
    rows.append(single("reps", float(len(gpu_reps)), "reps"))
    reasons = sorted(
        {r for names in gpu_reps["clock_event_names"].dropna() for r in str(names).split("|") if r}
    )
    rows.append(single("clock_event_reasons_seen", float(len(reasons)), "|".join(reasons) or "none"))
    return [{**scope, **row} for row in rows]


def _across_rows(
    scope: dict[str, Any], group: pd.DataFrame, medians: pd.DataFrame, resamples: int
) -> list[dict[str, Any]]:
    """The spread of each metric's per-GPU medians and its resolution, where every GPU has the metric."""
    rows = []
    for column, metric, _unit in METRICS:
        if medians[column].notna().all() and len(medians) > 1:
            statistics = {**_spread(medians[column]), **_resolution(gpu_samples(group, column), resamples)}
            rows += [single(metric, value, UNITS.get(name, "1"), name) for name, value in statistics.items()]
    rows.append(single("gpus", float(len(medians)), "gpus"))
    return [{**scope, **row} for row in rows]


def summarise(reps: pd.DataFrame, resamples: int = stats.RESAMPLES) -> pd.DataFrame:
    """Per GPU medians and, across GPUs, the spread of each metric; long format with units. `resamples`
    per interval and p-value: fewer make a large table faster, at coarser bounds."""
    rows: list[dict[str, Any]] = []
    reps = reps.assign(gpu=gpu_labels(reps))
    for (profile, backend, n), group in reps.groupby(["profile", "backend", "n"], sort=True):
        keys = {"study": "variability", "profile": profile, "backend": backend, "n": int(n)}
        per_gpu = group.groupby("gpu", sort=True)
        medians = per_gpu[[column for column, _, _ in METRICS]].median()
        relative = stats.relative_to_median_intervals(gpu_samples(group, "tflops"), resamples=resamples)
        for (device, gpu_reps), interval in zip(per_gpu, relative, strict=True):
            scope = {**keys, "scope": f"gpu {device}", "gpu_uuid": gpu_reps["gpu_uuid"].iloc[0]}
            rows += _gpu_rows(scope, gpu_reps, medians.loc[device], medians["tflops"].median(), interval)
        rows += _across_rows({**keys, "scope": "across gpus", "gpu_uuid": None}, group, medians, resamples)
    return pd.DataFrame(rows)
