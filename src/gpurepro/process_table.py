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

Every row of a figure names its processes' runs (`runs`), their values in that order
(`process_values`) and the GPU each ran on (`gpu_uuids`, its NVML UUID; empty where no process recorded
one: the CPU, or a table older than the column), so that a claim comparing two points can take the
interval of their difference or ratio over the processes themselves (process_stats), not only from the
two points' intervals, and the verdict can say round by round whether its points shared a GPU
(verdict/sides.py): with claim-affine placement a group may move between GPUs across rounds, and a
point's processes are pooled by GPU model, not by card.

The within-process interval (over a process's reps, blocks or sub-windows) stays in the study table; the
claims that compare points (orderings, differences) read this one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from .process_stats import across_processes, geometric_sd

ACROSS = ("processes", "median", "min", "max", "ci_low", "ci_high", "gsd")
# Units of the figures that are not in the metric's own unit.
UNITS = {"processes": "processes", "gsd": "x"}
COLUMNS = [
    "metric", "per_process", "statistic", "value", "unit", "interval", "runs", "process_values",
    "gpu_uuids", "reason",
]  # fmt: skip
# The text columns: empty, never NaN, where a row has none.
TEXT_COLUMNS = ["interval", "runs", "process_values", "gpu_uuids", "reason"]


def gpu_list(runs: Iterable[int], gpus: Mapping[int, str]) -> str:
    """Each run's GPU UUID in the order of `runs`, comma-separated as `runs` is ('' for a run without
    one); '' where none has one (a CPU run, or rows older than the UUID column)."""
    named = [gpus.get(int(run), "") for run in runs]
    return ",".join(named) if any(named) else ""


def gpus_by_run(rows: pd.DataFrame) -> dict[int, str]:
    """The GPU UUID of each run of a study table's rows (the first a run names; none where the table
    has no `gpu_uuid` column)."""
    if "gpu_uuid" not in rows or "run" not in rows:
        return {}
    named = rows.dropna(subset=["gpu_uuid"])
    named = named[named["gpu_uuid"].astype(str).str.strip() != ""]
    return {int(run): str(uuid) for run, uuid in named.groupby("run")["gpu_uuid"].first().items()}


def _rounds(rows: pd.DataFrame) -> pd.Series:
    """One value per run (the first where a run has several rows), NaN dropped."""
    values = pd.to_numeric(rows["value"], errors="coerce")
    return values.groupby(rows["run"]).first().dropna()


def _figure_rows(values: pd.Series, gpus: Mapping[int, str]) -> list[dict[str, Any]]:
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
    gpu_uuids = gpu_list(values.index, gpus)
    return [
        {
            "statistic": name,
            "value": figures[name],
            "interval": interval.method,
            "runs": runs,
            "process_values": process_values,
            "gpu_uuids": gpu_uuids,
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


def devices_of(point: pd.DataFrame) -> str:
    """The GPU indices (the `device` column) a point's processes ran on, in order, comma-separated: a
    point's processes are pooled across the cards of one model (with claim-affine placement its group
    may move between GPUs from one round to the next), and the row says which they were."""
    return ",".join(sorted(point["device"].astype(str).unique(), key=lambda d: (len(d), d)))


def summarise(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The across-process table of a study table whose rows carry `run`, `status` and `reason`, points
    named by `keys` (the point's columns without run). A `device` column is never a key: the row names
    every GPU index its processes ran on (devices_of), and `gpu_uuids` each process's card."""
    keys = [key for key in keys if key in table and key != "device"]
    by_device = "device" in table
    columns = ["device", *COLUMNS] if by_device else COLUMNS
    if table.empty:
        return pd.DataFrame(columns=[*keys, *columns])
    out: list[dict[str, Any]] = []
    for point_values, point in table.groupby(keys, dropna=False, sort=False):
        point_keys = dict(zip(keys, point_values, strict=True))
        if by_device:
            point_keys["device"] = devices_of(point)
        ok = point[point["status"].astype(str) == "ok"]
        gpus = gpus_by_run(ok)
        for (metric, statistic, unit), rows in ok.groupby(
            ["metric", "statistic", "unit"], dropna=False, sort=False
        ):
            for row in _figure_rows(_rounds(rows), gpus):
                row_unit = UNITS.get(row["statistic"], unit)
                figure = {"metric": metric, "per_process": statistic, "unit": row_unit}
                out.append({**point_keys, **figure, **row})
        out += [{**point_keys, **row} for row in _failed_rows(point)]
    frame = pd.DataFrame(out)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = "" if column in TEXT_COLUMNS else math.nan
    frame[TEXT_COLUMNS] = frame[TEXT_COLUMNS].fillna("")
    return frame[[*keys, *columns]]
