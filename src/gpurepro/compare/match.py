"""Join two runs' long tables point by point (points.py's rule) and grade each metric's ratio B/A."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pandas as pd

from ..stats import ratio_interval
from . import hostbound
from .grade import NOT_COMPARABLE, grade, metric_kind
from .points import PROTOCOL, central, describe_point, key_columns, normal
from .runs import Run
from .samples import compared_statistic, reps

Row = dict[str, Any]
Points = dict[tuple[str, ...], dict[tuple[str, str], list[Row]]]
COLUMNS = [
    "table",
    "study",
    "point",
    "metric",
    "statistic",
    "unit",
    "kind",
    "a_value",
    "b_value",
    "ratio",
    "ci_low",
    "ci_high",
    "reps_a",
    "reps_b",
    "grade",
    "change_pct",
    "better",
    "basis",
    "why",
    "summary",
]
EVERY_METRIC = "(every metric)"


def _points(table: pd.DataFrame, keys: list[str]) -> Points:
    """point key -> (metric, statistic) -> its rows (more than one: measured twice in one run)."""
    points: Points = {}
    for row in central(table).to_dict("records"):
        key = tuple(normal(row.get(column)) for column in keys)
        points.setdefault(key, {}).setdefault((str(row["metric"]), str(row["statistic"])), []).append(row)
    return points


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


def _no_value(row: Row, side: str) -> str:
    status = normal(row.get("status")) or "ok"
    why = f" (status {status}: {normal(row.get('reason')) or 'no reason recorded'})" if status != "ok" else ""
    return f"no value in {side}{why}"


def _why_not(a: Row, b: Row) -> str:
    """Why two matched rows cannot be compared, or '' where they can."""
    if protocol := _protocol_difference(a, b):
        return protocol
    if normal(a.get("unit")) != normal(b.get("unit")):
        return f"different units (A: {normal(a.get('unit'))}, B: {normal(b.get('unit'))})"
    for row, side in ((a, "A"), (b, "B")):
        if not math.isfinite(float(row["value"])):
            return _no_value(row, side)
    if float(a["value"]) == 0 and float(b["value"]) != 0:
        return f"A is 0 and B {float(b['value']):.4g}: no ratio"
    return ""


def _pair(a_run: Run, b_run: Run, a: Row, b: Row) -> Row:
    """The ratio of one matched metric, graded, or why it cannot be."""
    unit = normal(a.get("unit"))
    out: Row = {"unit": unit, "kind": metric_kind(str(a["metric"]), unit, str(a["statistic"]))}
    out.update(a_value=float(a["value"]), b_value=float(b["value"]))
    if why := _why_not(a, b):
        return {**out, **_not_comparable(why)}
    # equal values (0 in both, e.g. no throttled reps) are the same whatever their noise
    ratio = 1.0 if out["b_value"] == out["a_value"] else out["b_value"] / out["a_value"]
    sample_a, sample_b = reps(a_run, pd.Series(a)), reps(b_run, pd.Series(b))
    interval = None
    of = compared_statistic(pd.Series(a))
    if sample_a is not None and sample_b is not None and of is not None:
        interval = ratio_interval(sample_b, sample_a, of)
        out.update(reps_a=len(sample_a), reps_b=len(sample_b), ci_low=interval.low, ci_high=interval.high)
    graded = grade(ratio, interval, out["kind"])
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


def compare_table(name: str, a_run: Run, b_run: Run) -> list[Row]:
    """Every compared metric of one table in both runs, point by point."""
    keys = key_columns(a_run.tables[name], b_run.tables[name])
    a_points, b_points = _points(a_run.tables[name], keys), _points(b_run.tables[name], keys)
    rows = []
    for key in [*a_points, *(k for k in b_points if k not in a_points)]:
        named = dict(zip(keys, key, strict=True))
        where = {"table": name, "study": named.get("study") or name, "point": describe_point(named), **named}
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
        quantities = [*a_points[key], *(q for q in b_points[key] if q not in a_points[key])]
        for metric, statistic in quantities:
            here = {**where, "metric": metric, "statistic": statistic}
            a_rows, b_rows = a_points[key].get((metric, statistic)), b_points[key].get((metric, statistic))
            if not a_rows or not b_rows:
                rows.append({**here, **_not_comparable(f"absent in {'A' if not a_rows else 'B'}")})
            elif len(a_rows) > 1 or len(b_rows) > 1:
                why = f"ambiguous: measured {len(a_rows)} times in A and {len(b_rows)} in B (other GPUs?)"
                rows.append({**here, **_not_comparable(why)})
            elif _undefined(a_rows[0]) and _undefined(b_rows[0]):
                continue  # neither run has a value (e.g. normalised to an fp32 point neither measured)
            else:
                rows.append({**here, **_pair(a_run, b_run, a_rows[0], b_rows[0])})
    return rows


def _undefined(row: Row) -> bool:
    """A metric the point's own run left without a value although the point ran."""
    return (normal(row.get("status")) or "ok") == "ok" and not math.isfinite(float(row["value"]))


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
        if name not in UNGRADED_TABLES
    }
    return replace(run, tables=tables)


def compare(a_run: Run, b_run: Run) -> pd.DataFrame:
    """One tidy table: a row per (table, point, metric, statistic) of either run, but the ungraded."""
    rows: list[Row] = []
    a_run, b_run = _graded(a_run), _graded(b_run)
    for name in sorted({*a_run.tables, *b_run.tables}):
        if name in a_run.tables and name in b_run.tables:
            rows += compare_table(name, a_run, b_run)
        else:
            side = "B" if name not in b_run.tables else "A"
            why = f"table absent in {side}"
            rows.append({"table": name, "study": name, "metric": EVERY_METRIC, **_not_comparable(why)})
    table = pd.DataFrame(rows)
    keys = [c for c in table.columns if c not in COLUMNS]
    return hostbound.mark(table.reindex(columns=[*COLUMNS[:3], *keys, *COLUMNS[3:]]))
