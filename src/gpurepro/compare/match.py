"""Join two runs' long tables point by point (points.py's rule) and grade each metric, B against A.

A point's rows in one run are one per process (`run`, 1..k; one where the table has no `run` column):
its compared value is their median, and the interval of B/A is across processes (grade.py says why):
- both sides measured in at least two processes: Welch's t-interval of the log ratio of their means
  (`process_stats.unpaired_ratio_interval`);
- one process on a side: the between-process spread the project measured for this study and kind of
  figure (host-paced or GPU-bound: hostbound.py; config/between_process.yaml), through
  `process_stats.known_spread_ratio_interval`. Where both sides are one process with raw reps, the reps'
  bootstrap interval can only veto: a change inside one process's noise is not resolved, but reps never
  resolve one on their own. A study without a measured spread falls back to the noise floor, said so.
Dispersions (grade.py's "dispersion" kind) are read as B - A in their own unit, with the interval of the
difference: across processes, else from the two sides' own intervals (a spread between GPUs and its
`_ci_low`/`_ci_high` statistics), else from each side's reps (a GPU's rep CV); without any, unresolved.
Counts (throttled reps) are compared as counts (counts.py). Every interval that includes no change reads
"same within noise" only inside its kind's equivalence margin (margins.py), else "unresolved at this
spread".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import process_stats, stats
from ..stats import Interval
from . import hostbound, margins, spread
from .grade import (
    DISPERSION_METRICS,
    NOT_COMPARABLE,
    SAME,
    UNRESOLVED,
    Grade,
    dispersion_change,
    grade,
    grade_counts,
    grade_difference,
    interval_text,
    metric_kind,
)
from .points import PROCESS, PROTOCOL, central, counted, describe_point, key_columns, normal, uuids_of
from .runs import Run
from .samples import compared_statistic, reps

Row = dict[str, Any]
# point key -> (metric, statistic) -> process (`run`, '' without one) -> its rows (more than one: measured
# twice in one process, e.g. on two GPUs)
Points = dict[tuple[str, ...], dict[tuple[str, str], dict[str, list[Row]]]]
# point key -> (metric, statistic) -> process -> value, for the statistics central() leaves out (interval
# bounds such as spread_pct_ci_low)
Bounds = dict[tuple[str, ...], dict[tuple[str, str], dict[str, float]]]
COLUMNS = [
    "table",
    "study",
    "point",
    "metric",
    "statistic",
    "unit",
    "kind",
    "pace",
    "a_value",
    "b_value",
    "processes_a",
    "processes_b",
    "gpu_uuids_a",
    "gpu_uuids_b",
    "counted_a",
    "counted_b",
    "ratio",
    "ci_low",
    "ci_high",
    "difference",
    "diff_low",
    "diff_high",
    "reps_a",
    "reps_b",
    "grade",
    "change_pct",
    "better",
    "basis",
    "why",
    "summary",
    "host_bound",
]
EVERY_METRIC = "(every metric)"
# Tables the aggregators derive from the others (across-process summaries): compared through the tables
# they summarise, so comparing them too would count each point twice.
DERIVED_SUFFIX = "_processes"
WELCH = "Welch t across processes"
NOT_GRADED_DISPERSION = "dispersion without an interval: cannot tell"


@dataclass
class Side:
    """One run's rows of one metric of one point, a row per process."""

    rows: list[Row]
    values: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        values = np.array([float(row["value"]) for row in self.rows], dtype=float)
        self.values = values[np.isfinite(values)]

    @property
    def processes(self) -> int:
        """How many processes gave a value (a failed one is left out: the point stands on the rest)."""
        return len(self.values)

    @property
    def value(self) -> float:
        """The median over the processes (NaN where none gave a value)."""
        return float(np.median(self.values)) if len(self.values) else math.nan

    @property
    def first(self) -> Row:
        return self.rows[0]


@dataclass(frozen=True)
class Context:
    """What grading a row needs beyond its values: the runs (for raw reps), the study, the row's pace
    and the measured spreads."""

    a_run: Run
    b_run: Run
    study: str
    pace: str
    spreads: spread.Spreads
    a_bounds: dict[tuple[str, str], dict[str, float]]
    b_bounds: dict[tuple[str, str], dict[str, float]]


def _points(table: pd.DataFrame, keys: list[str]) -> Points:
    points: Points = {}
    for row in central(table).to_dict("records"):
        key = tuple(normal(row.get(column)) for column in keys)
        quantity = (str(row["metric"]), str(row["statistic"]))
        process = normal(row.get(PROCESS))
        points.setdefault(key, {}).setdefault(quantity, {}).setdefault(process, []).append(row)
    for quantities in points.values():
        for quantity, processes in quantities.items():
            quantities[quantity] = _one_process_per_gpu(processes)
    return points


def _one_process_per_gpu(processes: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """A point measured once per GPU in a table without processes (the reference rates of a placed run:
    one job on each selected GPU) has one row per card: each card's row is a process of the point, its
    sample, rather than several rows of one process (ambiguous). Rows of one GPU, or naming none, stay."""
    rows = processes.get("")
    uuids = {normal(row.get("gpu_uuid")) for row in rows or []}
    if not rows or len(rows) < 2 or len(uuids) != len(rows) or "" in uuids:
        return processes
    return {
        **{k: v for k, v in processes.items() if k},
        **{f"gpu {normal(r.get('gpu_uuid'))}": [r] for r in rows},
    }


def _bounds(table: pd.DataFrame, keys: list[str]) -> Bounds:
    """Every row's value by point, quantity and process: where a dispersion finds its interval bounds."""
    bounds: Bounds = {}
    for row in table.to_dict("records"):
        key = tuple(normal(row.get(column)) for column in keys)
        quantity = (str(row["metric"]), str(row["statistic"]))
        bounds.setdefault(key, {}).setdefault(quantity, {})[normal(row.get(PROCESS))] = float(row["value"])
    return bounds


def _near(key: tuple[str, ...], others: Points, keys: list[str]) -> str:
    """The other run's points that differ from `key` in one column only, as `column=value`."""
    near = []
    for other in others:
        differ = [i for i, (mine, theirs) in enumerate(zip(key, other, strict=True)) if mine != theirs]
        if len(differ) == 1:
            near.append(f"{keys[differ[0]]}={other[differ[0]] or '(empty)'}")
    return f" (it has this point with {', '.join(sorted(near))})" if near else ""


def _protocol_difference(a: Row, b: Row) -> str:
    for column, units in PROTOCOL.items():
        if units is not None and a.get("unit") not in units:
            continue
        mine, theirs = normal(a.get(column)), normal(b.get(column))
        if mine != theirs:
            return f"different {column} (A: {mine or 'not recorded'}, B: {theirs or 'not recorded'})"
    return ""


def _no_value(side: Side, name: str) -> str:
    failed = [row for row in side.rows if (normal(row.get("status")) or "ok") != "ok"]
    row = failed[0] if failed else side.first
    status = normal(row.get("status")) or "ok"
    why = f" (status {status}: {normal(row.get('reason')) or 'no reason recorded'})" if status != "ok" else ""
    return f"no value in {name}{why}"


def _why_not(a: Side, b: Side, kind: str) -> str:
    """Why two matched metrics cannot be compared, or '' where they can."""
    if protocol := _protocol_difference(a.first, b.first):
        return protocol
    if normal(a.first.get("unit")) != normal(b.first.get("unit")):
        return f"different units (A: {normal(a.first.get('unit'))}, B: {normal(b.first.get('unit'))})"
    for side, name in ((a, "A"), (b, "B")):
        if not side.processes:
            return _no_value(side, name)
    if kind not in ("dispersion", "count") and a.value == 0 and b.value != 0:
        return f"A is 0 and B {b.value:.4g}: no ratio"
    return ""


def _sides(a: Side, b: Side) -> str:
    """'1 process a side', or '2 v 3 processes'."""
    if a.processes == b.processes == 1:
        return "1 process a side"
    return f"{a.processes} v {b.processes} processes"


def _one_process_reps(context: Context, a: Row, b: Row, out: Row) -> tuple[np.ndarray, np.ndarray] | None:
    """Both sides' raw reps where each side is one process that kept them (None elsewhere); `out` gets
    their counts."""
    sample_a, sample_b = reps(context.a_run, pd.Series(a)), reps(context.b_run, pd.Series(b))
    if sample_a is None or sample_b is None or compared_statistic(pd.Series(a)) is None:
        return None
    out.update(reps_a=len(sample_a), reps_b=len(sample_b))
    return sample_a, sample_b


def _ratio_grade(context: Context, a: Side, b: Side, ratio: float, kind: str, out: Row) -> Grade:
    """B/A graded by its interval across processes, else the measured spread, else the floor."""
    sides = _sides(a, b)
    measured = spread.find(context.spreads, context.study, context.pace, str(a.first["metric"]))
    if a.processes >= 2 and b.processes >= 2:
        if process_stats.positive(a.values) and process_stats.positive(b.values):
            interval = process_stats.unpaired_ratio_interval(b.values, a.values)
            basis = f"{sides}: {WELCH}"
            if measured is not None:
                interval, basis = _at_least_measured(interval, a, b, measured, basis)
            out.update(ci_low=interval.low, ci_high=interval.high)
            return grade(ratio, interval, kind, basis)
        difference = process_stats.unpaired_difference_interval(b.values, a.values)
        return _difference_grade(a, b, kind, difference, sides, out)
    interval = None
    if measured is None:
        known = any(study == context.study for study, _, _ in context.spreads)
        which = f"{spread.SHOWN[context.pace]} " if known else ""
        basis = f"{sides}: no measured {which}between-process spread for {context.study}"
    else:
        interval = process_stats.known_spread_ratio_interval(b.values, a.values, math.log(measured.gsd))
        basis = f"{sides}: {measured.describe()}"
        if interval.known:
            out.update(ci_low=interval.low, ci_high=interval.high)
        else:
            basis = f"{sides}: {interval.method}"
    graded = grade(ratio, interval, kind, basis)
    samples = _one_process_reps(context, a.first, b.first, out) if a.processes == b.processes == 1 else None
    if samples is not None and graded.resolved:
        of = compared_statistic(pd.Series(a.first))
        over_reps = stats.ratio_interval(samples[1], samples[0], of)  # type: ignore[arg-type]
        if over_reps.known and not over_reps.excludes(1.0):
            veto = f"{graded.basis}; within one process's noise: reps' {interval_text(over_reps)}"
            same = interval is not None and margins.inside(interval.low, interval.high, kind)
            return Grade(SAME if same else UNRESOLVED, graded.change_pct, False, veto, "")
    return graded


def _at_least_measured(
    interval: Interval, a: Side, b: Side, measured: spread.Spread, basis: str
) -> tuple[Interval, str]:
    """The Welch interval, widened where it is narrower than the measured between-process spread allows
    for these process counts. A few processes that happen to agree (three fast ones of a host whose
    processes fall into a fast and a slow cluster) give a tight t-interval that the next run's processes
    need not respect; the spread measured over many processes is the floor of what a rerun can show."""
    floor = process_stats.known_spread_ratio_interval(b.values, a.values, math.log(measured.gsd))
    if not (interval.known and floor.known) or (floor.low >= interval.low and floor.high <= interval.high):
        return interval, basis
    widened = replace(interval, low=min(interval.low, floor.low), high=max(interval.high, floor.high))
    return widened, f"{basis}, widened to the {measured.describe()}"


def _difference_grade(a: Side, b: Side, kind: str, interval: Interval, sides: str, out: Row) -> Grade:
    """A ratio metric whose values are not all positive (a power above idle): B - A across processes."""
    out.update(difference=b.value - a.value, diff_low=interval.low, diff_high=interval.high)
    margin = margins.MARGINS[kind]
    basis = (
        f"{sides}: {WELCH} of B - A (values not all positive), {interval_text(interval)}, "
        f"{margin.describe(kind)} of the larger side"
    )
    change_pct = (b.value / a.value - 1) * 100 if a.value > 0 else math.nan
    width = margin.width * max(abs(a.value), abs(b.value))
    return grade_difference(a.value, b.value, interval, kind, basis, "", change_pct, width)


def _side_interval(side: Side, bounds: dict[tuple[str, str], dict[str, float]], row: Row) -> Interval | None:
    """A dispersion's own interval on one side: across its processes, else the bounds its table keeps
    beside it (spread_pct_ci_low/high; a max/min ratio's from its spread's), else None."""
    if side.processes >= 2:
        interval = process_stats.across_processes(side.values)
        return interval if interval.known else None
    metric, statistic = str(row["metric"]), str(row["statistic"])
    process = normal(row.get(PROCESS))
    names = [(statistic, 1.0, 0.0)]
    if statistic in ("value", "median"):
        names = [("", 1.0, 0.0)]
    if statistic == "max_over_min":  # max/min = 1 + spread_pct / 100: the same interval, rescaled
        names.append(("spread_pct", 0.01, 1.0))
    for name, scale, offset in names:
        prefix = f"{name}_" if name else ""
        low = bounds.get((metric, f"{prefix}ci_low"), {}).get(process, math.nan)
        high = bounds.get((metric, f"{prefix}ci_high"), {}).get(process, math.nan)
        if math.isfinite(low) and math.isfinite(high):
            bounded = (offset + scale * low, offset + scale * high)
            return Interval(side.value, *bounded, method="the table's interval")
    return None


def _dispersion_grade(context: Context, a: Side, b: Side, out: Row) -> Grade:
    """B - A of a dispersion in its own unit, resolved only where the interval of the difference
    excludes 0: across processes, else from both sides' intervals (resolved where they do not overlap),
    else from each side's reps (a GPU's rep CV); without an interval, not graded."""
    row = a.first
    unit, metric, statistic = normal(row.get("unit")), str(row["metric"]), str(row["statistic"])
    change = dispersion_change(a.value, b.value, unit, metric, statistic)
    sides = _sides(a, b)
    out.update(difference=b.value - a.value)
    interval, basis = None, f"{sides}: {NOT_GRADED_DISPERSION}"
    if a.processes >= 2 and b.processes >= 2:
        interval = process_stats.unpaired_difference_interval(b.values, a.values)
        basis = f"{sides}: {WELCH} of B - A"
    elif (first := _side_interval(a, context.a_bounds, row)) and (
        second := _side_interval(b, context.b_bounds, b.first)
    ):
        interval = Interval(b.value - a.value, second.low - first.high, second.high - first.low)
        overlap = "do not overlap" if interval.excludes(0.0) else "overlap"
        basis = (
            f"{sides}: intervals A [{first.low:.4g}, {first.high:.4g}], "
            f"B [{second.low:.4g}, {second.high:.4g}] {overlap}"
        )
    elif a.processes == b.processes == 1 and (samples := _one_process_reps(context, row, b.first, out)):
        interval = _rep_difference(*samples, compared_statistic(pd.Series(row)))  # type: ignore[arg-type]
        basis = f"{sides}: bootstrap over each side's reps of B - A"
    if interval is not None and interval.known:
        out.update(diff_low=interval.low, diff_high=interval.high)
        if not basis.startswith(f"{sides}: intervals"):
            basis = f"{basis}, {interval_text(interval)}"
        basis = f"{basis}, {margins.MARGINS['dispersion'].describe('dispersion')}"
    elif interval is not None:
        basis = f"{sides}: {NOT_GRADED_DISPERSION} ({interval.method})"
        interval = None
    width = margins.dispersion_width(unit, metric, statistic, DISPERSION_METRICS)
    return grade_difference(a.value, b.value, interval, "dispersion", basis, change, math.nan, width)


def _rep_difference(sample_a: np.ndarray, sample_b: np.ndarray, of: stats.Statistic) -> Interval:
    """The percentile-bootstrap interval of of(B reps) - of(A reps), each side resampled on its own."""

    def difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return of(b, axis=axis) - of(a, axis=axis)

    return stats.bootstrap([sample_a, sample_b], difference)  # type: ignore[arg-type]


def _pair(context: Context, a: Side, b: Side) -> Row:
    """One matched metric of one point, graded, or why it cannot be."""
    row = a.first
    unit = normal(row.get("unit"))
    kind = metric_kind(str(row["metric"]), unit, str(row["statistic"]))
    out: Row = {"unit": unit, "kind": kind, "pace": context.pace, "a_value": a.value, "b_value": b.value}
    out.update(processes_a=a.processes, processes_b=b.processes)
    out.update(gpu_uuids_a=uuids_of(a.rows), gpu_uuids_b=uuids_of(b.rows))
    out.update(counted_a=counted(a.rows), counted_b=counted(b.rows))
    if why := _why_not(a, b, kind):
        return {**out, **_not_comparable(why)}
    if kind == "dispersion":
        graded = _dispersion_grade(context, a, b, out)
        ratio = math.nan
    elif kind == "count":
        graded = grade_counts(a.values, b.values, _sides(a, b))
        out.update(difference=b.value - a.value)
        ratio = math.nan
    else:
        # equal values (0 in both, e.g. no throttled reps) are the same whatever their noise
        ratio = 1.0 if b.value == a.value else b.value / a.value
        graded = _ratio_grade(context, a, b, ratio, kind, out)
    return {
        **out,
        "ratio": ratio,
        "grade": graded.grade,
        "change_pct": graded.change_pct,
        "better": graded.better,
        "basis": graded.basis,
        "summary": graded.describe(),
    }


def _not_comparable(why: str) -> Row:
    return {"grade": NOT_COMPARABLE, "why": why, "summary": f"{NOT_COMPARABLE}: {why}"}


def _utilisation(points: dict[tuple[str, str], dict[str, list[Row]]]) -> float:
    """A point's GPU utilisation in its energy window: the median over its processes (NaN without)."""
    processes = points.get(hostbound.UTILISATION, {})
    return Side([row for rows in processes.values() for row in rows]).value if processes else math.nan


def _ambiguous(processes: dict[str, list[Row]]) -> int:
    """The most rows one process has for one metric (more than one: other GPUs in one table)."""
    return max(len(rows) for rows in processes.values())


def compare_table(name: str, a_run: Run, b_run: Run, spreads: spread.Spreads | None = None) -> list[Row]:
    """Every compared metric of one table in both runs, point by point."""
    spreads = spread.load() if spreads is None else spreads
    keys = key_columns(a_run.tables[name], b_run.tables[name])
    a_points, b_points = _points(a_run.tables[name], keys), _points(b_run.tables[name], keys)
    a_bounds, b_bounds = _bounds(a_run.tables[name], keys), _bounds(b_run.tables[name], keys)
    rows = []
    for key in [*a_points, *(k for k in b_points if k not in a_points)]:
        named = dict(zip(keys, key, strict=True))
        study = named.get("study") or name
        where = {"table": name, "study": study, "point": describe_point(named), **named}
        if key not in b_points or key not in a_points:
            side, others = ("B", b_points) if key not in b_points else ("A", a_points)
            rows.append(
                {
                    **where,
                    "metric": EVERY_METRIC,
                    **_not_comparable(f"absent in {side}{_near(key, others, keys)}"),
                }
            )
            continue
        bound = math.nan
        if study == "inference":
            bound = hostbound.host_bound(_utilisation(a_points[key]), _utilisation(b_points[key]))
        quantities = [*a_points[key], *(q for q in b_points[key] if q not in a_points[key])]
        for metric, statistic in quantities:
            here = {**where, "metric": metric, "statistic": statistic, "host_bound": bound}
            a_rows, b_rows = a_points[key].get((metric, statistic)), b_points[key].get((metric, statistic))
            if not a_rows or not b_rows:
                rows.append({**here, **_not_comparable(f"absent in {'A' if not a_rows else 'B'}")})
            elif _ambiguous(a_rows) > 1 or _ambiguous(b_rows) > 1:
                why = (
                    f"ambiguous: measured {_ambiguous(a_rows)} times in one process of A and "
                    f"{_ambiguous(b_rows)} in B (other GPUs?)"
                )
                rows.append({**here, **_not_comparable(why)})
            else:
                a_side = Side([rows_[0] for rows_ in a_rows.values()])
                b_side = Side([rows_[0] for rows_ in b_rows.values()])
                if _undefined(a_side) and _undefined(b_side):
                    continue  # neither run has a value (e.g. normalised to an fp32 point neither measured)
                unit = normal(a_side.first.get("unit"))
                pace = hostbound.pace(study, named, metric, unit, bound)
                context = Context(
                    a_run, b_run, study, pace, spreads, a_bounds.get(key, {}), b_bounds.get(key, {})
                )
                rows.append({**here, **_pair(context, a_side, b_side)})
    return rows


def _undefined(side: Side) -> bool:
    """A metric the point's own run left without a value although the point ran."""
    return not side.processes and all((normal(row.get("status")) or "ok") == "ok" for row in side.rows)


# Not graded: the pipeline's own job times (cool-down waits included: how long a run took, not what it
# measured); counts that say how a measurement was taken (how many inferences fitted a window) rather
# than what it found, each following from a graded metric; and quantities the protocol sets or the point
# is (window lengths, iterations, reps, GPUs, the sampler's rate, the model's size), the same in any two
# runs of one config: graded, they would only pad the share "same within noise". And the training loss at
# a point's last step: a check that its models trained, after as many steps as its time window held
# (HFTA trains until min_timed_s has passed, so a faster run takes more steps and ends lower).
UNGRADED_TABLES = {"runtimes"}
UNGRADED_METRICS = {
    "timed_inferences",
    "energy_window_inferences",
    "runs_per_block",
    "samples",
    "processes",
    "timed_steps",
    "timed_window",
    "wall_time",
    "timed_iterations",
    "warmup_iterations",
    "energy_window",
    "energy_window_reliable",
    "telemetry_rate",
    "gpus",
    "reps",
    "parameters",
    "final_loss",
}


def _graded(run: Run) -> Run:
    """The run with only the tables and metrics that are graded."""
    tables = {
        name: table[~table["metric"].isin(UNGRADED_METRICS)]
        for name, table in run.tables.items()
        if name not in UNGRADED_TABLES and not name.endswith(DERIVED_SUFFIX)
    }
    return replace(run, tables=tables)


def compare(a_run: Run, b_run: Run, spreads: Path | None = None) -> pd.DataFrame:
    """One tidy table: a row per (table, point, metric, statistic) of either run, but the ungraded and
    the derived (`*_processes`) tables. `spreads`: the measured between-process spreads' file (default
    config/between_process.yaml)."""
    measured = spread.load(spreads)
    rows: list[Row] = []
    a_run, b_run = _graded(a_run), _graded(b_run)
    for name in sorted({*a_run.tables, *b_run.tables}):
        if name in a_run.tables and name in b_run.tables:
            rows += compare_table(name, a_run, b_run, measured)
        else:
            side = "B" if name not in b_run.tables else "A"
            why = f"table absent in {side}"
            rows.append({"table": name, "study": name, "metric": EVERY_METRIC, **_not_comparable(why)})
    table = pd.DataFrame(rows)
    keys = [c for c in table.columns if c not in COLUMNS]
    return hostbound.mark(table.reindex(columns=[*COLUMNS[:3], *keys, *COLUMNS[3:]]))
