"""Reading a claim's values from a run's tables, and saying precisely why a value could not be read.

"Not measured" has three kinds, because each calls for something else: the table is absent (its study
did not run: run the rule that makes it), the point is absent (the table has no row with the claim's
keys: the sweep did not include it, or it failed), or the metric is absent (the point is there but not
this metric: a table aggregated by an older version; re-aggregate it with the rule named).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import pandas as pd

from .claims import Selection

# A ddp row at k > 1 GPUs that divides the k-GPU process's images/s by the 1-GPU process's
# (training/summary.py): two processes stand behind it, one a side, so a one-process reading of it
# widens by both sides' between-process spread.
OVER_ONE_GPU = frozenset({"speedup_vs_1_gpu", "scaling_efficiency"})


class NotMeasured(Exception):
    """Why a claim's value could not be read from the tables."""


@dataclass(frozen=True)
class Values:
    """The selected values (one, or every row's for reduce: each), their unit, their intervals where
    the selection names interval statistics (one (low, high) per value), and where the values come from
    an across-process table (process_table.py), each value's processes: run -> that process's figure."""

    values: list[float]
    unit: str
    intervals: list[tuple[float, float]] | None = None
    processes: list[dict[int, float]] | None = None
    # how many processes stand behind each side of the (first) value: one side for a point, two for a
    # row that is itself a ratio of two points (a speedup) or a value combined from two selections; None
    # where the table does not say
    counts: tuple[int | None, ...] = (None,)
    # a difference's two sides (the value is the first minus the second), whose own spreads its interval
    # adds; empty for a point or a ratio
    parts: tuple[float, ...] = ()
    # the confidence of the intervals: 95%, or a repeated look's (looks.py)
    confidence: float = 0.95

    @property
    def one_process(self) -> bool:
        """Every side of the value read from a single process."""
        return all(count == 1 for count in self.counts)


def read(
    selection: Selection, study: str, tables: dict[str, pd.DataFrame], rules: dict[str, str] | None = None
) -> Values:
    """The values a selection picks from `tables`; `rules` maps a table to the rule that writes it."""
    rows = _rows(selection, study, tables, rules or {})
    units = sorted(set(rows["unit"].astype(str)))
    if len(units) > 1:
        raise NotMeasured(f"{selection.describe()} mixes units {', '.join(units)}")
    values = pd.to_numeric(rows["value"], errors="coerce")
    if values.isna().all() or (selection.reduce in ("single", "each") and values.isna().any()):
        raise NotMeasured(f"{selection.describe()} has no value (the measurement recorded none)")
    intervals = _intervals(selection, study, tables, rules or {}, rows)
    processes = _processes(rows)
    counts = _fewest(
        [_counts(row, processes[i] if processes else None) for i, (_, row) in enumerate(rows.iterrows())]
    )
    if selection.reduce == "each":
        return Values([float(v) for v in values], units[0], intervals, processes, counts)
    if selection.reduce == "single":
        if len(values) > 1:
            raise NotMeasured(
                f"{len(values)} rows of {selection.describe()}; the claim needs filters that leave one, "
                "or a reduce (each, min, max, median, mean)"
            )
        return Values([float(values.iloc[0])], units[0], intervals, processes, counts)
    reduced = float(getattr(values.dropna(), selection.reduce)())
    return Values([reduced], units[0], None)


def _fewest(per_row: list[tuple[int | None, ...]]) -> tuple[int | None, ...]:
    """The processes behind each side over several rows (reduce: each): the fewest, which the least
    resolved row stands on; unknown where any row does not say."""
    sides = {len(counts) for counts in per_row}
    if len(sides) != 1:
        return (None,)
    return tuple(
        None if any(count is None for count in side) else min(side)  # type: ignore[type-var]
        for side in zip(*per_row, strict=True)
    )


def _counts(row: pd.Series, processes: dict[int, float] | None) -> tuple[int | None, ...]:
    """The processes behind a row: those an across-process table names (`runs`); else a speedup
    table's `processes` and `baseline_processes` (the two points it divides); else one, for a row read
    from one raw file (`source_file`: one process's measurement), one a side where it divides two
    (OVER_ONE_GPU); else unknown."""
    if processes is not None:
        return (len(processes),)

    def count(column: str) -> int | None:
        value = pd.to_numeric(pd.Series([row.get(column)]), errors="coerce").iloc[0]
        return None if pd.isna(value) else int(value)

    if "processes" in row.index:
        sides = [count("processes")]
        if "baseline_processes" in row.index:
            sides.append(count("baseline_processes"))
        return tuple(sides)
    if "source_file" in row.index and not pd.isna(row["source_file"]):
        return (1, 1) if row.get("metric") in OVER_ONE_GPU and (count("gpus") or 0) > 1 else (1,)
    return (None,)


def _rows(
    selection: Selection, study: str, tables: dict[str, pd.DataFrame], rules: dict[str, str]
) -> pd.DataFrame:
    if selection.table not in tables:
        rule = rules.get(selection.table, study)
        raise NotMeasured(
            f"table absent: no tables/{selection.table}.csv in this run (study {study} did not run here; "
            f"`snakemake {rule}` makes it)"
        )
    table = tables[selection.table]
    missing = [
        column for column in ["value", "unit", "metric", "statistic", *selection.where] if column not in table
    ]
    if missing:
        rule = rules.get(selection.table, study)
        raise NotMeasured(
            f"metric absent: tables/{selection.table}.csv has no column {', '.join(missing)} (an older "
            f"table: re-aggregate it with `snakemake {rule} --forcerun {rule}`)"
        )
    point = _matching(table, selection.where)
    if not point.any():
        raise NotMeasured(f"point absent: no row of tables/{selection.table}.csv where {_filters(selection)}")
    rows = table[point & _matching(table, {"metric": selection.metric, "statistic": selection.statistic})]
    if rows.empty:
        rule = rules.get(selection.table, study)
        raise NotMeasured(
            f"metric absent: tables/{selection.table}.csv has the point ({_filters(selection)}) but no "
            f"{selection.metric} {selection.statistic}: the points measured do not give it, or the table "
            f"predates it (then re-aggregate it with `snakemake {rule} --forcerun {rule}`)"
        )
    return rows


def _intervals(
    selection: Selection,
    study: str,
    tables: dict[str, pd.DataFrame],
    rules: dict[str, str],
    rows: pd.DataFrame,
) -> list[tuple[float, float]] | None:
    """Each selected row's interval: the rows of the interval statistics with the same other columns."""
    if selection.interval is None or selection.reduce not in ("single", "each"):
        return None
    table = tables[selection.table]
    keys = [c for c in table.columns if c not in ("statistic", "value", "unit")]
    ends = []
    for statistic in selection.interval:
        bound = Selection(selection.table, selection.metric, statistic, selection.where)
        bound_rows = _rows(bound, study, tables, rules)
        merged = rows[keys].merge(bound_rows[[*keys, "value"]], on=keys, how="left")
        ends.append(pd.to_numeric(merged["value"], errors="coerce").tolist())
    return [(float(low), float(high)) for low, high in zip(*ends, strict=True)]


def _processes(rows: pd.DataFrame) -> list[dict[int, float]] | None:
    """Each row's processes (run -> value) where the table names them (an across-process table's `runs`
    and `process_values`), else None."""
    if not {"runs", "process_values"} <= set(rows.columns):
        return None
    found = []
    for runs, values in zip(rows["runs"], rows["process_values"], strict=True):
        if pd.isna(runs) or pd.isna(values) or not str(runs).strip():
            return None
        numbers = [float(v) for v in str(values).split(",")]
        found.append(dict(zip((int(float(r)) for r in str(runs).split(",")), numbers, strict=True)))
    return found


def _filters(selection: Selection) -> str:
    return ", ".join(f"{k}={v}" for k, v in selection.where.items()) or "any"


def _matching(table: pd.DataFrame, wanted: dict[str, Any]) -> pd.Series:
    keep = pd.Series(True, index=table.index)
    for column, want in wanted.items():
        keep &= _matches(table[column], want)
    return keep


def _matches(column: pd.Series, want: Any) -> pd.Series:
    """Booleans as booleans, numbers as numbers (25536 matches 25536.0), strings as shell patterns."""
    if isinstance(want, bool):
        return column.astype(str).str.lower() == str(want).lower()
    if isinstance(want, int | float):
        return pd.to_numeric(column, errors="coerce") == want
    return column.map(lambda cell: not pd.isna(cell) and fnmatchcase(str(cell), want))


def selected_rows(selection: Selection, table: pd.DataFrame) -> pd.DataFrame:
    """The rows of `table` a selection picks (its point, metric and statistic), none where a column it
    filters on is absent: what a step that adds processes to a claim's points reads."""
    if any(column not in table for column in ["metric", "statistic", *selection.where]):
        return table.iloc[0:0]
    wanted = {**selection.where, "metric": selection.metric, "statistic": selection.statistic}
    return table[_matching(table, wanted)]


def swept(selection: Selection, column: str, tables: dict[str, pd.DataFrame]) -> list[Any]:
    """The values of `column` the run swept at the selection's other keys (its metric and statistic
    present), sorted: what a claim about a point's place in a sweep can be judged from."""
    table = tables.get(selection.table)
    if table is None or column not in table:
        return []
    others = {key: want for key, want in selection.where.items() if key != column}
    rows = selected_rows(Selection(selection.table, selection.metric, selection.statistic, others), table)
    return sorted(rows[column].dropna().unique().tolist())
