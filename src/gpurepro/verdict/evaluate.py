"""Check claims against a run's tables.

Every claim ends in one of four states, in this order of precedence:
- not applicable on this GPU: the run's profile is not one the claim names, or its GPU's name does not
  match the claim's `gpu_name` (another variant of the model). Never a failure.
- not measured: the claim's table was not made in this run (its study did not run, or is not built yet),
  or no row matches the claim's selection (e.g. a quick run skipped that size), or the selection is
  ambiguous, or the value is empty. The detail says which.
- within tolerance / outside tolerance: the measured value against the expected value or range widened
  by the tolerance.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import pandas as pd

from .claims import Claim, Selection

WITHIN = "within tolerance"
OUTSIDE = "outside tolerance"
NOT_APPLICABLE = "not applicable on this GPU"
NOT_MEASURED = "not measured"
STATUSES = (WITHIN, OUTSIDE, NOT_MEASURED, NOT_APPLICABLE)


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    status: str
    detail: str
    values: tuple[float, ...] = ()
    plot: str | None = None

    @property
    def measured(self) -> float | None:
        """The measured value; for `reduce: each`, the one furthest from the accepted range's middle."""
        if not self.values:
            return None
        if len(self.values) == 1:
            return self.values[0]
        low, high = self.claim.accepted_range()
        middle = (low + high) / 2 if math.isfinite(low + high) else (low if math.isfinite(low) else high)
        return max(self.values, key=lambda v: abs(v - middle))

    def describe_measured(self) -> str:
        if not self.values:
            return ""
        if len(self.values) == 1:
            return f"{self.values[0]:.4g} {self.claim.unit}"
        return f"{min(self.values):.4g}–{max(self.values):.4g} {self.claim.unit} ({len(self.values)} values)"


class NotMeasured(Exception):
    """Why a claim's value could not be read from the tables."""


def gpu_names(tables: dict[str, pd.DataFrame]) -> list[str]:
    """The NVML names of the GPUs this run measured, from every table that records them."""
    names: set[str] = set()
    for table in tables.values():
        if "gpu_name" in table.columns:
            names.update(str(n) for n in table["gpu_name"].dropna().unique())
    return sorted(names)


def evaluate(
    claims: list[Claim], profile: str, tables: dict[str, pd.DataFrame], plots: dict[str, str] | None = None
) -> list[Outcome]:
    """The outcome of each claim for a run of `profile` whose tables (by name: tables/<name>.csv) and
    plots (by name: plots/<name>.png -> the path to link) are given; claims for this GPU first, each
    group in the order given."""
    names = gpu_names(tables)
    outcomes = [_evaluate(claim, profile, tables, names, plots or {}) for claim in claims]
    return sorted(outcomes, key=lambda outcome: outcome.status == NOT_APPLICABLE)


def _evaluate(
    claim: Claim, profile: str, tables: dict[str, pd.DataFrame], names: list[str], plots: dict[str, str]
) -> Outcome:
    plot = plots.get(claim.plot) if claim.plot else None
    if profile not in claim.profiles:
        return Outcome(
            claim, NOT_APPLICABLE, f"claim is for profile {', '.join(claim.profiles)}; this run is {profile}"
        )
    if claim.gpu_name and names and not any(re.search(claim.gpu_name, n) for n in names):
        return Outcome(
            claim,
            NOT_APPLICABLE,
            f"claim is for GPUs named /{claim.gpu_name}/; this run measured {', '.join(names)}",
        )
    try:
        values, how = _measured_values(claim, tables)
    except NotMeasured as why:
        return Outcome(claim, NOT_MEASURED, str(why), plot=plot)
    low, high = claim.accepted_range()
    inside = all(low <= v <= high for v in values)
    accepted = f"accepted {_bound(low)} to {_bound(high)} {claim.unit}"
    return Outcome(claim, WITHIN if inside else OUTSIDE, f"{accepted}; {how}", tuple(values), plot)


def _bound(value: float) -> str:
    return "any" if math.isinf(value) else f"{value:.4g}"


def _measured_values(claim: Claim, tables: dict[str, pd.DataFrame]) -> tuple[list[float], str]:
    numerator, unit = _values(claim.measure, claim.study, tables)
    if claim.divide_by is None:
        if unit != claim.unit:
            raise NotMeasured(f"{claim.measure.describe()} is in {unit}, the claim in {claim.unit}")
        return numerator, f"from {claim.measure.describe()}"
    denominator, other_unit = _values(claim.divide_by, claim.study, tables)
    if unit != other_unit:
        raise NotMeasured(f"cannot divide {unit} by {other_unit}")
    if denominator[0] == 0:
        raise NotMeasured(f"{claim.divide_by.describe()} is 0")
    ratio = numerator[0] / denominator[0]
    return [ratio], (
        f"{numerator[0]:.4g} {unit} ({claim.measure.describe()}) / {denominator[0]:.4g} {unit} "
        f"({claim.divide_by.describe()})"
    )


def _values(selection: Selection, study: str, tables: dict[str, pd.DataFrame]) -> tuple[list[float], str]:
    """The selected values (one, or every row's for reduce: each) and their unit."""
    if selection.table not in tables:
        raise NotMeasured(f"no tables/{selection.table}.csv in this run (study {study} did not run here)")
    rows = select(tables[selection.table], selection)
    if rows.empty:
        raise NotMeasured(f"no row of {selection.describe()}")
    units = sorted(set(rows["unit"].astype(str)))
    if len(units) > 1:
        raise NotMeasured(f"{selection.describe()} mixes units {', '.join(units)}")
    values = pd.to_numeric(rows["value"], errors="coerce")
    if values.isna().any():
        raise NotMeasured(f"{selection.describe()} has no value (the measurement recorded none)")
    if selection.reduce == "each":
        return [float(v) for v in values], units[0]
    if selection.reduce == "single":
        if len(values) > 1:
            raise NotMeasured(
                f"{len(values)} rows of {selection.describe()}; the claim needs filters that leave one, "
                "or a reduce (each, min, max, median, mean)"
            )
        return [float(values.iloc[0])], units[0]
    return [float(getattr(values, selection.reduce)())], units[0]


def select(table: pd.DataFrame, selection: Selection) -> pd.DataFrame:
    """The rows of a long table with the selection's metric and statistic whose columns match `where`."""
    wanted = {"metric": selection.metric, "statistic": selection.statistic, **selection.where}
    missing = [column for column in ["value", "unit", *wanted] if column not in table.columns]
    if missing:
        raise NotMeasured(f"tables/{selection.table}.csv has no column {', '.join(missing)}")
    keep = pd.Series(True, index=table.index)
    for column, want in wanted.items():
        keep &= _matches(table[column], want)
    return table[keep]


def _matches(column: pd.Series, want: Any) -> pd.Series:
    """Booleans as booleans, numbers as numbers (25536 matches 25536.0), strings as shell patterns."""
    if isinstance(want, bool):
        return column.astype(str).str.lower() == str(want).lower()
    if isinstance(want, int | float):
        return pd.to_numeric(column, errors="coerce") == want
    return column.map(lambda cell: not pd.isna(cell) and fnmatchcase(str(cell), want))
