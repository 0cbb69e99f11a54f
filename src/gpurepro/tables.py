"""Tidy long tables: one row per (group, metric, statistic) with an explicit unit column."""

from __future__ import annotations

import math
from collections.abc import Iterable
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
