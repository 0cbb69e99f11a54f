"""Tidy long tables: one row per (group, metric, statistic) with an explicit unit column."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

LONG_COLUMNS = ["metric", "statistic", "value", "unit"]


def describe(values: pd.Series, metric: str, unit: str) -> list[dict[str, Any]]:
    """Median, quartiles, IQR, min, max and count of a sample, as long rows."""
    clean = values.dropna().astype(float)
    if clean.empty:
        return [{"metric": metric, "statistic": "median", "value": math.nan, "unit": unit}]
    q1, median, q3 = clean.quantile([0.25, 0.5, 0.75])
    stats = {
        "median": median,
        "p25": q1,
        "p75": q3,
        "iqr": q3 - q1,
        "min": clean.min(),
        "max": clean.max(),
        "count": float(len(clean)),
    }
    return [
        {"metric": metric, "statistic": name, "value": value, "unit": "1" if name == "count" else unit}
        for name, value in stats.items()
    ]


def single(metric: str, value: float, unit: str, statistic: str = "value") -> dict[str, Any]:
    return {"metric": metric, "statistic": statistic, "value": value, "unit": unit}


def long_frame(keys: dict[str, Any], rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Prefix every metric row with the identifying keys (device, backend, size, ...)."""
    return pd.DataFrame([{**keys, **row} for row in rows])


def pick(table: pd.DataFrame, metric: str, statistic: str = "median") -> pd.DataFrame:
    """The rows of one metric and statistic, for plotting."""
    return table[(table["metric"] == metric) & (table["statistic"] == statistic)]


def point_keys(
    study: str, rows: pd.DataFrame, sidecar: dict[str, Any], path: Path | str, columns: Iterable[str]
) -> dict[str, Any]:
    """The key columns of one raw point's tidy rows: study, profile, device, the GPU (from the provenance
    sidecar), the point's own `columns` from its first raw row, status and reason, and the source file."""
    first = rows.iloc[0]
    gpu = (sidecar.get("gpus") or [{}])[0]
    keys: dict[str, Any] = {"study": study, "profile": first["profile"], "device": str(first["device"])}
    keys["gpu_name"] = gpu.get("name", "cpu")
    keys["gpu_uuid"] = gpu.get("uuid")
    for column in columns:
        value = first.get(column, math.nan)
        keys[column] = None if pd.isna(value) else value
    keys["status"] = first.get("status", "ok")
    reason = first.get("reason", "")
    keys["reason"] = "" if pd.isna(reason) else str(reason)
    keys["source_file"] = Path(path).name
    return keys
