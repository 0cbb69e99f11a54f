"""A study's across-process table (`tables/<table>_processes.csv`): each figure over the processes that
measured it, beside the study's own table, whose rows are one process (`run`) each.

One row per point (its keys without `run`), metric, `per_process` statistic (the study table's
statistic: a process's median latency, its mean power, ...) and `statistic`, the figure over processes:

- `processes`: how many processes measured it (status ok), `failed_processes`: how many did not (their
  reasons in `reason`; the point stands on the rest);
- `median`, `min`, `max` over processes;
- `ci_low`, `ci_high`: the 95% interval across processes (process_stats.across_processes: a Student-t
  interval of the geometric mean where every value is positive, of the mean otherwise; empty with one
  process), the method in `interval`;
- `gsd`: the geometric SD over processes (the factor one process typically lies from the others).

Every row of a figure names its processes' runs (`runs`) and their values in that order
(`process_values`), so that a claim comparing two points can take the interval of their difference or
ratio over the processes themselves (process_stats), not only from the two points' intervals.

The within-process interval (over a process's reps, blocks or sub-windows) stays in the study table; the
claims that compare points (orderings, differences) read this one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .process_stats import across_processes, geometric_sd

ACROSS = ("processes", "median", "min", "max", "ci_low", "ci_high", "gsd")
# Units of the figures that are not in the metric's own unit.
UNITS = {"processes": "processes", "gsd": "x"}
COLUMNS = [
    "metric", "per_process", "statistic", "value", "unit", "interval", "runs", "process_values", "reason"
]  # fmt: skip
# The text columns: empty, never NaN, where a row has none.
TEXT_COLUMNS = ["interval", "runs", "process_values", "reason"]


def _rounds(rows: pd.DataFrame) -> pd.Series:
    """One value per run (the first where a run has several rows), NaN dropped."""
    values = pd.to_numeric(rows["value"], errors="coerce")
    return values.groupby(rows["run"]).first().dropna()


def _figure_rows(values: pd.Series) -> list[dict[str, Any]]:
    interval = across_processes(values.to_numpy())
    figures = {
        "processes": float(len(values)),
        "median": interval.value,
        "min": float(values.min()) if len(values) else math.nan,
        "max": float(values.max()) if len(values) else math.nan,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "gsd": geometric_sd(values.to_numpy()),
    }
    runs = ",".join(str(int(r)) for r in values.index)
    process_values = ",".join(repr(float(v)) for v in values)
    return [
        {
            "statistic": name,
            "value": figures[name],
            "interval": interval.method,
            "runs": runs,
            "process_values": process_values,
        }
        for name in ACROSS
    ]


def _failed_rows(point: pd.DataFrame) -> list[dict[str, Any]]:
    failed = point[point["status"].astype(str) != "ok"].drop_duplicates("run")
    reasons = "; ".join(
        f"run {int(row.run)}: {row.status}: {row.reason}" for row in failed.itertuples() if row.reason
    )
    return [
        {
            "metric": "failed_processes",
            "per_process": "count",
            "statistic": "value",
            "value": float(len(failed)),
            "unit": "processes",
            "reason": reasons,
        }
    ]


def summarise(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The across-process table of a study table whose rows carry `run`, `status` and `reason`, points
    named by `keys` (the point's columns without run)."""
    keys = [key for key in keys if key in table]
    if table.empty:
        return pd.DataFrame(columns=[*keys, *COLUMNS])
    out: list[dict[str, Any]] = []
    for point_values, point in table.groupby(keys, dropna=False, sort=False):
        point_keys = dict(zip(keys, point_values, strict=True))
        ok = point[point["status"].astype(str) == "ok"]
        for (metric, statistic, unit), rows in ok.groupby(
            ["metric", "statistic", "unit"], dropna=False, sort=False
        ):
            for row in _figure_rows(_rounds(rows)):
                row_unit = UNITS.get(row["statistic"], unit)
                figure = {"metric": metric, "per_process": statistic, "unit": row_unit}
                out.append({**point_keys, **figure, **row})
        out += [{**point_keys, **row} for row in _failed_rows(point)]
    frame = pd.DataFrame(out)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = "" if column in TEXT_COLUMNS else math.nan
    frame[TEXT_COLUMNS] = frame[TEXT_COLUMNS].fillna("")
    return frame[[*keys, *COLUMNS]]
