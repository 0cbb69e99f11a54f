"""The claims of the SGEMM and variability figures as the verdict judged them on the figures' own tables,
placed where each figure draws them (plotting.Marks): a rate of one backend and N on sgemm.png's rate
panel, a spread across GPUs of one backend's time or power on variability.png's spread panel; a judged
claim neither panel shows (a ratio of two backends, a per-GPU figure) is given in words.

Kept apart from sgemm/ and variability/: the comparison and the reference rates read those packages'
tables, and the verdict reads the comparison, so the studies stay below the verdict and take their marks
as plain bands; `gpurepro plot` asks here and hands them over.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from .plotting import Marks
from .verdict.published import Judged, judged_on

SGEMM = "sgemm"  # the claims that name each figure (`plot: ...` in config/expected/)
VARIABILITY = "variability"
ACROSS = "across gpus"  # the variability summary's scope of a spread across the node's GPUs
SPREADS = ("time", "power")  # the spreads variability.png draws (the claims read these two)


def _marks(readings: list[Judged], key: Callable[[Judged], tuple | None], notes: list[str]) -> Marks:
    """The readings placed by `key` (a reading -> the figure's key of its point, or None where no panel
    shows it); a direction judged alone (no range tested: the verdict prints none) is left out."""
    marks = Marks(notes=notes)
    for reading in filter(lambda r: r.range_tested, readings):
        at = key(reading) if len(reading.values) == 1 else None
        if at is None:
            marks.apart.extend(reading.band(i) for i in range(len(reading.values)))
        else:
            marks.placed[at] = reading.band()
    return marks


def _one_point(reading: Judged) -> bool:
    return not (reading.claim.divide_by or reading.claim.subtract)


def sgemm_marks(table: pd.DataFrame) -> Marks:
    """sgemm.png's claims judged on its table: a median rate of one backend and N, by (backend, N)."""

    def key(reading: Judged) -> tuple[str, int] | None:
        measure = reading.claim.measure
        if (measure.metric, measure.statistic) != ("rate", "median") or not _one_point(reading):
            return None
        return str(measure.where["backend"]), int(measure.where["n"])

    notes: list[str] = []
    return _marks(judged_on(SGEMM, {"sgemm": table}, notes), key, notes)


def variability_marks(reps: pd.DataFrame, summary: pd.DataFrame) -> Marks:
    """variability.png's claims judged on its summary (the reps name the GPUs): a spread across GPUs of
    one backend's time or power, by (metric, backend, N)."""

    def key(reading: Judged) -> tuple[str, str, int] | None:
        measure, where = reading.claim.measure, reading.claim.measure.where
        spread = (measure.statistic, where.get("scope")) == ("spread_pct", ACROSS)
        if not spread or measure.metric not in SPREADS or not _one_point(reading):
            return None
        return measure.metric, str(where.get("backend")), int(where["n"])

    notes: list[str] = []
    tables = {"variability_reps": reps, "variability_summary": summary}
    return _marks(judged_on(VARIABILITY, tables, notes), key, notes)
