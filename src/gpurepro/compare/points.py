"""Which columns name a point, and which statistic of a metric is compared.

The rule: a point's key is every column of the long table except
- the long columns themselves (metric, statistic, value, unit),
- IDENTITY: what names the run, the GPU or the file rather than the workload (profile, device index,
  GPU name/UUID/serial, the processes' runs and GPUs a summary row names, source file, status and
  reason, host), which differs between two runs of one point by design, and
- PROCESS: which of the point's independent processes a row is (`run`, 1..k): the processes of one point
  are its sample, collapsed into one value per side (their median) and one interval (across them),
- PROTOCOL: how the point was measured (cast_protocol; energy_method for energy and power metrics). Two
  points alike but for these are the same point measured differently: not comparable, and said so,
- COUNTED: how many processes and repeats measured it (a speedup's processes on each side, HFTA's
  repeats): a run with more processes measured the same point more precisely, not another point; the
  counts stay in the comparison beside the values (counted_a, counted_b).
Where one run's table lacks a key column (an older table), its value there is empty.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..tables import LONG_COLUMNS

# The columns that name the GPU (by NVML UUID) of a row's processes: one process's (study tables), each
# process's in the order of `runs` (across-process and speedup tables), a speedup's baseline processes'.
GPU_COLUMNS = ("gpu_uuid", "gpu_uuids", "baseline_gpu_uuids")

IDENTITY = [
    "profile",
    "device",
    "devices",
    "gpu_name",
    "gpu_uuid",
    *GPU_COLUMNS[1:],
    "runs",
    "baseline_runs",
    "gpu_serial",
    "source_file",
    "status",
    "reason",
    "host",
    "dcgm_note",
]
# Which process of a point a row is: not a key (a point's processes are its sample, match.py).
PROCESS = "run"
# Protocol column -> the units of the metrics it bears on (None: every metric).
PROTOCOL: dict[str, set[str] | None] = {"cast_protocol": None, "energy_method": {"J", "W"}}
# How many processes and repeats measured a point: not a key (shown beside it, `counted`).
COUNTED = ["processes", "baseline_processes", "repeats"]
# Statistics that describe a sample's spread or an interval, not its centre: never compared themselves
# (a metric with a median is compared by its median; the rest name quantities of their own, e.g.
# energy_per_inference gross / above_idle).
SPREAD = {"p25", "p75", "iqr", "min", "max", "count", "ci_low", "ci_high", "p_value"}
SPREAD_SUFFIXES = ("_ci_low", "_ci_high")
QUANTITY = ["metric", "statistic"]


def key_columns(*tables: pd.DataFrame) -> list[str]:
    """The key columns of a table in two runs: the union of both, in the first one's order."""
    excluded = {*LONG_COLUMNS, *IDENTITY, *PROTOCOL, *COUNTED, PROCESS}
    columns: list[str] = []
    for table in tables:
        columns += [c for c in table.columns if c not in excluded and c not in columns]
    return columns


def normal(value: Any) -> str:
    """A key value as text that matches across runs: NaN and None as '', 128.0 as '128'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def central(table: pd.DataFrame) -> pd.DataFrame:
    """The compared rows: a metric's median where its point has one, else each statistic that is not a
    spread or interval bound (value, mean, gross, total, ...)."""
    statistic = table["statistic"].astype(str)
    spread = statistic.isin(SPREAD) | statistic.str.endswith(SPREAD_SUFFIXES)
    groups = [table[c].map(normal) for c in key_columns(table)] + [table["metric"]]
    if PROCESS in table:
        groups.append(table[PROCESS].map(normal))
    has_median = (statistic == "median").groupby(groups).transform("any")
    keep = ~spread & (~has_median | (statistic == "median"))
    return table[keep]


def uuids_of(rows: list[dict[str, Any]]) -> str:
    """The distinct GPU UUIDs the rows' processes ran on, sorted, ';'-joined; '' where no row names one
    (the CPU, or a table older than the UUID columns: unknown, never an error)."""
    found = {
        uuid.strip()
        for row in rows
        for column in GPU_COLUMNS
        for uuid in normal(row.get(column)).split(",")
        if uuid.strip()
    }
    return ";".join(sorted(found))


def short_uuid(uuid: str) -> str:
    """A GPU UUID as people tell GPUs apart: its first 8 hex digits ('GPU-8fd2ceae'; a MIG device's
    'MIG-' UUID likewise)."""
    prefix, _, rest = uuid.partition("-")
    return f"{prefix}-{rest[:8]}" if rest else uuid


def counted(rows: list[dict[str, Any]]) -> str:
    """'processes=3, baseline_processes=4, repeats=4': how many processes and repeats measured the
    rows' point, where its table says ('' where not); several rows' differing counts joined by '/'."""
    shown = []
    for column in COUNTED:
        values = sorted({normal(row.get(column)) for row in rows} - {""})
        if values:
            shown.append(f"{column}={'/'.join(values)}")
    return ", ".join(shown)


def describe_point(keys: dict[str, str]) -> str:
    """`model=deit-b, batch_size=1, ...`: the point's non-empty key values, for people."""
    return ", ".join(f"{k}={v}" for k, v in keys.items() if v != "" and k != "study")
