"""Power above active idle at a point's median pace: each process's energy per inference above active
idle times the rate the point ran at over all its processes.

Why: at batch 1 in eager mode the host sets the pace (it launches every kernel from Python), and that
pace moves from process to process by far more than the GPU's work does. On one H100 BERT-B s384 ran 194
inferences in one process's 3 s energy window and 468 in another's; its power above active idle went
from 10.5 to 27.8 W with it, while its energy per inference above active idle stayed within 0.163-0.182
J. Power is energy per inference times the rate, so a process's power at the point's median rate keeps
the point's own pace (BERT-L, twice BERT-B's layers, still runs at about half BERT-B's rate) and leaves
out the between-process swing of the host, which is not the GPU's. The median rate's own spread is the
host's too; `energy_window_rate` (statistic `median_over_processes`) shows the rate used.

The rows (metric `power_above_active_idle`, statistic `at_median_pace`, one per process) join the
study table, so the across-process table (process_table.py) reads them as every other figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ..tables import pick

STATISTIC = "at_median_pace"


def _value(rows: pd.DataFrame, metric: str, statistic: str) -> float:
    picked = pick(rows, metric, statistic)["value"]
    return float(picked.iloc[0]) if len(picked) else math.nan


def _rate(rows: pd.DataFrame) -> float:
    """Inferences a second over one process's energy window; NaN without one."""
    seconds = _value(rows, "energy_window", "value")
    inferences = _value(rows, "energy_window_inferences", "value")
    return inferences / seconds if seconds > 0 else math.nan


def _template(rows: pd.DataFrame) -> dict:
    """The point's and process's key columns, from one of the process's rows."""
    return rows.iloc[0].drop(["metric", "statistic", "value", "unit"], errors="ignore").to_dict()


def rows_at_median_pace(table: pd.DataFrame, point_keys: Sequence[str]) -> pd.DataFrame:
    """For each point (`point_keys`, without the run) with an energy window in its processes: per
    process, the energy per inference above active idle at the point's median rate (W), and once per
    process the median rate itself. Empty where no process of a point has both figures."""
    keys = [key for key in point_keys if key in table]
    ok = table[table["status"].astype(str) == "ok"]
    if ok.empty or "run" not in ok:
        return pd.DataFrame(columns=table.columns)
    out: list[dict] = []
    for _, point in ok.groupby(keys, dropna=False, sort=False):
        processes = {run: rows for run, rows in point.groupby("run", sort=True)}
        rates = pd.Series({run: _rate(rows) for run, rows in processes.items()}).dropna()
        if rates.empty:
            continue
        median_rate = float(rates.median())
        for rows in processes.values():
            energy = _value(rows, "energy_per_inference", "above_active_idle")
            if not math.isfinite(energy):
                continue
            base = _template(rows)
            out.append({**base, "metric": "power_above_active_idle", "statistic": STATISTIC,
                        "value": energy * median_rate, "unit": "W"})  # fmt: skip
            out.append({**base, "metric": "energy_window_rate", "statistic": "median_over_processes",
                        "value": median_rate, "unit": "inferences/s"})  # fmt: skip
    return pd.DataFrame(out, columns=table.columns)
