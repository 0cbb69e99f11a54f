"""A point's raw reps, where the run kept them: the reps inside one process, behind its median.

Reps show one process's noise only, not how far the next process lands, so they never resolve a change
on their own (match.py grades by intervals across processes). They serve two ends where each side is a
single process: a change the measured between-process spread would resolve stays unresolved where the
reps' own bootstrap interval of the ratio includes 1; and a dispersion of the reps (each GPU's rep_cv in
the variability table, the coefficient of variation of its reps' times) gets the interval of its
difference B - A from them. Only medians whose table value is the median of one raw column are
resampled (so the interval is about the very number compared): sgemm's per-rep time, rate and telemetry
(raw/<backend>_n<n>.csv), inference latency over the Timer's blocks (raw/<family>/<file>.csv, `ms`), ddp
step time over timed intervals, the reference rates' reps (raw/rates.csv) and each GPU's reps in the
variability table (tables/variability_reps.csv).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from ..sgemm.summary import REP_METRICS
from ..stats import Statistic, coefficient_of_variation
from ..variability.summary import METRICS as VARIABILITY_METRICS
from ..variability.summary import RUN_LEVEL, gpu_labels
from .points import normal
from .runs import Run, read_csv

Sampler = Callable[[Run, pd.Series], np.ndarray | None]
SGEMM_COLUMNS = {metric: column for column, metric, _ in REP_METRICS}
INFERENCE_COLUMNS = {"latency": "ms", "power_during_latency": "power_w_median"}
VARIABILITY_COLUMNS = {metric: column for column, metric, _ in VARIABILITY_METRICS if column not in RUN_LEVEL}
# a GPU's rep_cv is the coefficient of variation of its reps' times (variability/summary.py)
VARIABILITY_COLUMNS["rep_cv"] = "ms"
# Dispersions recomputed from the reps, by metric: the statistic the row holds (a median otherwise).
DISPERSIONS: dict[str, Statistic] = {"rep_cv": coefficient_of_variation}


def _raw(run: Run, row: pd.Series) -> pd.DataFrame | None:
    path = run.raw_file(str(row["study"]), normal(row.get("source_file")))
    return None if path is None else read_csv(path)


def _column(columns: dict[str, str]) -> Sampler:
    def sample(run: Run, row: pd.Series) -> np.ndarray | None:
        column = columns.get(row["metric"])
        raw = _raw(run, row) if column else None
        return None if raw is None or column not in raw else raw[column].to_numpy(float)

    return sample


def _ddp(run: Run, row: pd.Series) -> np.ndarray | None:
    raw = _raw(run, row) if row["metric"] == "step_time" else None
    if raw is None:
        return None
    timed = raw[raw["phase"] == "timed"]
    return (timed["seconds"] / timed["iterations"] * 1e3).to_numpy(float)


def _reference(run: Run, row: pd.Series) -> np.ndarray | None:
    raw = _raw(run, row)
    if raw is None or "reference" not in raw:
        return None
    return raw.loc[raw["reference"] == row["metric"], "value"].to_numpy(float)


def _variability(run: Run, row: pd.Series) -> np.ndarray | None:
    reps = run.wide.get("variability_reps")
    column = VARIABILITY_COLUMNS.get(row["metric"])
    if reps is None or column is None or not str(row.get("scope", "")).startswith("gpu "):
        return None
    same = (
        (gpu_labels(reps) == str(row["scope"]).removeprefix("gpu "))
        & (reps["backend"].astype(str) == str(row["backend"]))
        & (reps["n"].map(normal) == normal(row["n"]))
    )
    return reps.loc[same, column].to_numpy(float)


SAMPLERS: dict[str, Sampler] = {
    "sgemm": _column(SGEMM_COLUMNS),
    "inference": _column(INFERENCE_COLUMNS),
    "ddp": _ddp,
    "reference": _reference,
    "variability": _variability,
}


def compared_statistic(row: pd.Series) -> Statistic | None:
    """What a row's value is of its reps: their median, or a dispersion of them; None: neither."""
    if row["statistic"] == "median":
        return np.median  # type: ignore[return-value]
    return DISPERSIONS.get(str(row["metric"]))


def reps(run: Run, row: pd.Series) -> np.ndarray | None:
    """The raw reps behind a row's median or dispersion, or None where the run has none for it."""
    sampler = SAMPLERS.get(str(row.get("study")))
    if sampler is None or compared_statistic(row) is None:
        return None
    values = sampler(run, row)
    return values if values is not None and len(values) else None
