"""Variability tables: every rep of every GPU and run in one tidy table, and the spread between GPUs.

The spread follows the original study: each GPU's median over its reps and runs, then across GPUs the
ratio of the slowest to the fastest (max/min) and the coefficient of variation, per metric. Each GPU's
rate is also given relative to the median GPU, and throttled reps are counted, not averaged away.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..results import read_sidecar
from ..sgemm.summary import REP_METRICS
from ..tables import single

# (column of the reps table, metric name, unit)
METRICS = [*REP_METRICS, ("energy_per_rep_j", "energy_per_rep", "J")]


def read_reps(path: Path | str) -> pd.DataFrame:
    """One raw file's reps with the GPU's identity and the run's energy and idle power from its sidecar."""
    reps = pd.read_csv(path)
    sidecar = read_sidecar(path)
    gpu = (sidecar.get("gpus") or [{}])[0]
    device = str(reps["device"].iloc[0])
    measurement = sidecar.get("measurement", {})
    energy = measurement.get("energy", {}).get(device, {})
    reps["device"] = device
    reps["gpu_name"] = gpu.get("name", "cpu")
    reps["gpu_uuid"] = gpu.get("uuid")
    reps["gpu_serial"] = gpu.get("serial")
    reps["idle_power_w"] = measurement.get("idle", {}).get(device, {}).get("power_w")
    reps["energy_per_rep_j"] = energy.get("energy_per_op_j")
    reps["energy_per_rep_above_idle_j"] = energy.get("energy_per_op_above_idle_j")
    reps["cooldown_status"] = measurement.get("cooldown", {}).get("status")
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


def summarise(reps: pd.DataFrame) -> pd.DataFrame:
    """Per GPU medians and, across GPUs, the spread of each metric; long format with units."""
    rows: list[dict[str, Any]] = []
    reps = reps.assign(gpu=gpu_labels(reps))
    for (profile, backend, n), group in reps.groupby(["profile", "backend", "n"], sort=True):
        keys = {"study": "variability", "profile": profile, "backend": backend, "n": int(n)}
        per_gpu = group.groupby("gpu")
        medians = per_gpu[[column for column, _, _ in METRICS]].median()
        median_rate = medians["tflops"].median()
        for device, gpu_reps in per_gpu:
            scope = {**keys, "scope": f"gpu {device}", "gpu_uuid": gpu_reps["gpu_uuid"].iloc[0]}
            for column, metric, unit in METRICS:
                rows.append({**scope, **single(metric, float(medians.loc[device, column]), unit, "median")})
            relative = float(medians.loc[device, "tflops"] / median_rate)
            rows.append({**scope, **single("rate_vs_median_gpu", relative, "1")})
            rows.append(
                {**scope, **single("rep_cv", float(gpu_reps["ms"].std(ddof=0) / gpu_reps["ms"].mean()), "1")}
            )
            rows.append({**scope, **single("throttled_reps", float(gpu_reps["throttled"].sum()), "reps")})
            rows.append({**scope, **single("reps", float(len(gpu_reps)), "reps")})
            reasons = sorted(
                {r for names in gpu_reps["clock_event_names"].dropna() for r in str(names).split("|") if r}
            )
            rows.append(
                {
                    **scope,
                    **single("clock_event_reasons_seen", float(len(reasons)), "|".join(reasons) or "none"),
                }
            )
        scope = {**keys, "scope": "across gpus", "gpu_uuid": None}
        for column, metric, _unit in METRICS:
            if medians[column].notna().all() and len(medians) > 1:
                for statistic, value in _spread(medians[column]).items():
                    rows.append(
                        {
                            **scope,
                            **single(metric, value, "1" if statistic != "spread_pct" else "%", statistic),
                        }
                    )
        rows.append({**scope, **single("gpus", float(len(medians)), "gpus")})
    return pd.DataFrame(rows)
