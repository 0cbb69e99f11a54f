"""Which sides of a claim's reading the host paces, what the host contributes to them, and the GPU-bound
figure beside a host-paced baseline.

A point the host paces keeps its GPU busy under half the time (compare/hostbound.py's rule): eager
batch-1 inference (the GPU busy 18-25% on an H200) and serial HFTA steps (one model's small step at a
time). Its figure measures the CPU, its clocks and the virtualisation as much as the GPU: serial B=1
training read 13,634 to 18,951 samples/s on one H200 from process to process, and HFTA's speedup over it
9.58 to 13.08x on four H200 machines, while the same serial step replayed as one CUDA graph kept the GPU
busy and read 68,249 to 68,790 samples/s. So a reading resting on such a point says which side is
host-paced, how busy its GPU was where the tables record it, and (for a speedup over a host-paced
baseline) the same speedup over the baseline's graphed step where the run measured one: what the GPU
alone gives.

The pace of a side is read from the GPU's utilisation over the point's energy window where its table
records one (inference), else from the point's kind (rounds.py: serial and stock small-B HFTA steps, eager
small-batch inference).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from .. import rounds
from ..compare.hostbound import HOST_BOUND_BELOW_PCT
from ..compare.spread import GPU_BOUND, HOST_PACED
from ..registry import STEP_GRAPHED
from .claims import Claim, Selection
from .reading import NotMeasured, read, selected_rows
from .statuses import (
    ABOVE_RANGE,
    DIRECTION_ABOVE_RANGE,
    DIRECTION_HOST,
    DIRECTION_OUTSIDE,
    DIRECTION_UNRESOLVED,
    DIRECTION_WITHIN,
    HOST_DEPENDENT,
    NOT_RESOLVED,
    OUTSIDE,
    WITHIN,
)

BUSY_METRIC, BUSY_STATISTIC = "gpu_utilization", "energy_window_median"
# A speedup row's baseline point: each baseline column stands for the fused side's column it names.
BASELINE_COLUMNS = {"baseline": "mode", "baseline_b": "b", "baseline_step": "step"}
# Columns that name a row's figure or processes, not its point.
NOT_POINT = {
    "metric", "statistic", "value", "unit", "per_process", "interval", "runs", "process_values", "reason",
    "run", "source_file", "status", "gpu_uuid", "gpu_uuids", "device", "repeats", "processes",
    "baseline_processes", "baseline_runs", "baseline_gpu_uuids",
}  # fmt: skip


@dataclass(frozen=True)
class PacedSide:
    """One side of a reading: what it is, whether the host paces it, and how busy its GPU was (NaN where
    its table records none)."""

    label: str
    pace: str
    busy: float = math.nan

    @property
    def host_paced(self) -> bool:
        return self.pace == HOST_PACED

    def describe(self) -> str:
        """'deit-b: GPU busy 25%' or 'serial: host-paced (no GPU utilisation in its table)'."""
        if math.isfinite(self.busy):
            return f"{self.label}: GPU busy {self.busy:.0f}% of its energy window"
        kind = "host-paced" if self.host_paced else "GPU-bound"
        return f"{self.label}: {kind} by its kind of point (no GPU utilisation in its table)"


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def point_of(row: Mapping[str, object]) -> dict[str, str]:
    """The columns of a row that name its point, as text ('' where empty)."""
    return {str(k): _text(v) for k, v in row.items() if k not in NOT_POINT}


def busy(table: pd.DataFrame, point: Mapping[str, str]) -> float:
    """The GPU's utilisation (%) over the point's energy window, the median over its processes, from the
    study table or its across-process table; NaN where the table records none."""
    if "metric" not in table:
        return math.nan
    rows = table[table["metric"] == BUSY_METRIC]
    if "per_process" in rows:
        rows = rows[(rows["per_process"] == BUSY_STATISTIC) & (rows["statistic"] == "median")]
    else:
        rows = rows[rows["statistic"] == BUSY_STATISTIC]
    for column, want in point.items():
        if column in rows and column not in BASELINE_COLUMNS:
            rows = rows[rows[column].map(_text) == want]
    values = pd.to_numeric(rows["value"], errors="coerce").dropna()
    return float(values.median()) if len(values) else math.nan


def pace(study: str, point: Mapping[str, str], measured_busy: float) -> str:
    """HOST_PACED or GPU_BOUND: by the measured utilisation where known, else by the point's kind."""
    if math.isfinite(measured_busy):
        return HOST_PACED if measured_busy < HOST_BOUND_BELOW_PCT else GPU_BOUND
    try:
        if study == "inference" and point.get("mode") and point.get("batch_size"):
            paced = rounds.inference_host_paced(point["mode"], int(float(point["batch_size"])))
            return HOST_PACED if paced else GPU_BOUND
        if study == "hfta" and point.get("mode"):
            # serial steps are the host's at any B; a fused or MPS point by its B where the table names it
            b = int(float(point["b"])) if point.get("b") else None
            if point["mode"] == "serial" or b is not None:
                paced = rounds.hfta_host_paced(point["mode"], point.get("step") or "stock", b or 1)
                return HOST_PACED if paced else GPU_BOUND
    except ValueError:
        pass
    return GPU_BOUND


def _sides_of(selection: Selection, study: str, tables: dict[str, pd.DataFrame]) -> list[PacedSide]:
    """The side one selection reads, and a speedup row's baseline: host-paced where any row it reads is."""
    table = tables.get(selection.table)
    rows = selected_rows(selection, table) if table is not None else pd.DataFrame()
    if rows.empty:
        return []
    found: dict[str, list[PacedSide]] = {}
    for _, row in rows.iterrows():
        point = point_of(row.to_dict())
        sides = {"": point}
        if "baseline" in point and point["baseline"]:
            sides["baseline"] = {
                **point,
                **{own: point.get(col, "") for col, own in BASELINE_COLUMNS.items()},
            }
        for name, side in sides.items():
            measured = busy(table, side)
            found.setdefault(name, []).append(PacedSide("", pace(study, side, measured), measured))
    out = []
    for name, paced in found.items():
        label = _label(selection, name, rows)
        host = [side for side in paced if side.host_paced]
        chosen = max(host or paced, key=lambda side: side.busy if math.isfinite(side.busy) else -1.0)
        out.append(PacedSide(label, chosen.pace, chosen.busy))
    return out


def _label(selection: Selection, name: str, rows: pd.DataFrame) -> str:
    """A side's name: the baseline it divides by, or the values its selection names."""
    if name == "baseline":
        return f"baseline {rows['baseline'].iloc[0]}"
    named = [str(v) for k, v in selection.where.items() if k in ("model", "mode", "backend")]
    if "mode" in rows and "mode" not in selection.where:
        named.insert(0, str(rows["mode"].iloc[0]))
    return " ".join(named) or selection.metric


def claim_sides(claim: Claim, tables: dict[str, pd.DataFrame]) -> list[PacedSide]:
    """The sides of a claim's value in the order reading.Values counts its processes: the measure (and
    its baseline, for a speedup row), then what it is divided by or subtracted from (and its baseline)."""
    sides = _sides_of(claim.measure, claim.study, tables)
    other = claim.divide_by or claim.subtract
    if other is not None:
        sides += _sides_of(other, claim.study, tables)
    return sides


def gpu_bound_baseline(claim: Claim, sides: list[PacedSide], tables: dict[str, pd.DataFrame]) -> str:
    """For a speedup over a host-paced baseline: the same speedup over the baseline's graphed step, a
    figure of its own ('' where the claim has no such baseline)."""
    where = claim.measure.where
    host_baseline = any(side.host_paced and side.label.startswith("baseline") for side in sides)
    if "baseline_step" not in where or not host_baseline:
        return ""
    graphed = claim.measure.with_where({"baseline_step": STEP_GRAPHED})
    baseline = where.get("baseline", "the baseline")
    try:
        values = read(graphed, claim.study, tables)
    except NotMeasured:
        return (
            f"GPU-bound baseline: no graphed {baseline} point in this run (the study's graphs setting), so "
            "no speedup over the GPU's own pace is shown"
        )
    shown = ", ".join(f"{v:.3g}" for v in values.values)
    spans = (
        " " + ", ".join(f"[{low:.3g}, {high:.3g}]" for low, high in values.intervals)
        if values.intervals and all(math.isfinite(end) for span in values.intervals for end in span)
        else ""
    )
    return (
        f"GPU-bound baseline: over the graphed {baseline} step (the GPU busy, the host out of its pace) the "
        f"same speedup reads {shown}{values.unit}{spans}, a figure of its own, not judged"
    )


def host_words(sides: list[PacedSide]) -> str:
    """What the host contributes to a reading: its host-paced sides and how busy their GPU was."""
    host = [side for side in sides if side.host_paced]
    return "; ".join(side.describe() for side in host)


# A magnitude's results, by whether the claim has a direction: what each reads as when host-dependent.
_WITH_DIRECTION = (DIRECTION_WITHIN, DIRECTION_OUTSIDE, DIRECTION_ABOVE_RANGE, DIRECTION_UNRESOLVED)
_WITHOUT_DIRECTION = (WITHIN, OUTSIDE, ABOVE_RANGE, NOT_RESOLVED)
_INCONCLUSIVE = "magnitude inconclusive: "  # judging's words for a straddling magnitude, replaced here


def named(
    claim: Claim, result: str, detail: str, sides: list[PacedSide], resolvable: bool, baseline: str
) -> tuple[str, str]:
    """The result of a claim resting on a host-paced side: its magnitude host-dependent (shown, not
    counted) unless its interval over machines resolved it, with what the host contributes beside it;
    every other claim's result unchanged."""
    if not any(side.host_paced for side in sides):
        return result, detail
    shown = "; ".join(part for part in (host_words(sides), baseline) if part)
    magnitude = _WITH_DIRECTION if claim.direction is not None else _WITHOUT_DIRECTION
    unresolved = result in (DIRECTION_UNRESOLVED, NOT_RESOLVED)
    if result not in magnitude or (resolvable and not unresolved):
        return result, f"{detail}; host-paced: {shown}" if result in magnitude else detail
    why = (
        "its interval over machines straddles an end of the accepted range"
        if resolvable
        else "no spread between machines is measured for its host-paced side"
    )
    words = f"magnitude host-dependent, not counted ({why}): {shown}; {detail.replace(_INCONCLUSIVE, '')}"
    return (DIRECTION_HOST if claim.direction is not None else HOST_DEPENDENT), words
