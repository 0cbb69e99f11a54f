"""Check claims against a run's tables, on whatever GPU the run measured.

How a claim is judged depends on its kind and on the GPU:
- relative (a ratio within one run): on every GPU, its direction (e.g. a speedup above 1) apart from its
  magnitude: "direction holds, magnitude within tolerance", "... outside tolerance", or "direction does
  not hold".
- absolute, on the paper's GPU: "within tolerance" or "outside tolerance", as published.
- absolute, on another GPU: scaled through reference rates (scaling.py): "scaled from <GPU>: within
  tolerance" or "... outside tolerance", with the scaling's uncertainty added to the tolerance.
Any claim is "not measured" when its value cannot be read here, and the detail says why: no GPU in the
run, too few GPUs for the claim, its table or rows absent (a study that did not run, a size or tool
missing), an ambiguous selection, or a reference rate the scaling needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import pandas as pd

from .claims import RELATIVE, Claim, Selection
from .hardware import Gpu
from .scaling import NoReference, measured_references, scale_factor

WITHIN = "within tolerance"
OUTSIDE = "outside tolerance"
DIRECTION_WITHIN = "direction holds, magnitude within tolerance"
DIRECTION_OUTSIDE = "direction holds, magnitude outside tolerance"
DIRECTION_FAILS = "direction does not hold"
NOT_MEASURED = "not measured"

# How far each result supports its claim, for the per-paper summary.
HELD, PARTLY, NOT_HELD, UNMEASURED = "held", "partly held", "not held", "not measured"
_GRADES = {
    WITHIN: HELD,
    DIRECTION_WITHIN: HELD,
    DIRECTION_OUTSIDE: PARTLY,
    OUTSIDE: NOT_HELD,
    DIRECTION_FAILS: NOT_HELD,
    NOT_MEASURED: UNMEASURED,
}
EXACT, SCALED = "exact", "scaled"


@dataclass(frozen=True)
class Here:
    """What a run measured on: its GPUs' NVML names, how many GPUs it had, its reference rates."""

    gpu_names: tuple[str, ...]
    gpu_count: int
    references: dict[str, float]

    @classmethod
    def of(cls, tables: dict[str, pd.DataFrame], gpu_count: int | None = None) -> Here:
        """From the tables (every GPU name they record); the GPU count, unless the workflow says how
        many GPUs the run had, is the number of GPUs the tables name."""
        names = gpu_names(tables)
        return cls(names, len(names) if gpu_count is None else gpu_count, measured_references(tables))

    def describe(self) -> str:
        return ", ".join(self.gpu_names) or "no GPU"


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    result: str  # WITHIN, OUTSIDE, DIRECTION_*, NOT_MEASURED
    detail: str
    judged: str = ""  # EXACT, SCALED or RELATIVE; empty when not measured
    paper_gpus: tuple[Gpu, ...] = ()
    measured_on: str = ""
    values: tuple[float, ...] = ()
    accepted: tuple[float, float] = (-math.inf, math.inf)
    factor: float | None = None  # the scaling's factor, for a scaled claim
    plot: str | None = None

    @property
    def status(self) -> str:
        """The verdict in words; a scaled claim says from which GPU."""
        if self.judged == SCALED:
            return f"scaled from {self.paper_gpus[0].name}: {self.result}"
        return self.result

    @property
    def grade(self) -> str:
        return _GRADES[self.result]

    def describe_paper_gpus(self) -> str:
        return ", ".join(gpu.name for gpu in self.paper_gpus)

    def describe_basis(self) -> str:
        """Which GPUs the judgement rests on, e.g. "measured on NVIDIA H200; paper: V100 SXM2"."""
        if not self.judged:
            return f"paper: {self.describe_paper_gpus()}"
        return f"measured on {self.measured_on}; paper: {self.describe_paper_gpus()}"

    def describe_expected(self) -> str:
        """The expectation here: the published one, or scaled to this GPU."""
        return self.claim.describe_expected(self.factor)

    @property
    def measured(self) -> float | None:
        """The measured value; for `reduce: each`, the one furthest from the accepted range's middle."""
        if not self.values:
            return None
        if len(self.values) == 1:
            return self.values[0]
        low, high = self.accepted
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


def gpu_names(tables: dict[str, pd.DataFrame]) -> tuple[str, ...]:
    """The NVML names of the GPUs this run measured, from every table that records them (the CPU,
    which the tables name 'cpu', is not a GPU)."""
    names: set[str] = set()
    for table in tables.values():
        if "gpu_name" in table.columns:
            names.update(str(n) for n in table["gpu_name"].dropna().unique())
    return tuple(sorted(names - {"cpu"}))


def evaluate(
    claims: list[Claim],
    tables: dict[str, pd.DataFrame],
    hardware: dict[str, Gpu],
    gpu_count: int | None = None,
    plots: dict[str, str] | None = None,
) -> list[Outcome]:
    """The outcome of each claim, in the order given, for a run whose tables (by name: tables/<name>.csv)
    and plots (by name: plots/<name>.png -> the path to link) are given. `gpu_count`: GPUs the run had
    (default: those its tables name)."""
    here = Here.of(tables, gpu_count)
    return [_evaluate(claim, here, tables, hardware, plots or {}) for claim in claims]


def _evaluate(
    claim: Claim, here: Here, tables: dict[str, pd.DataFrame], hardware: dict[str, Gpu], plots: dict[str, str]
) -> Outcome:
    paper = tuple(hardware[gpu] for gpu in claim.gpus)
    plot = plots.get(claim.plot) if claim.plot else None

    def not_measured(why: str) -> Outcome:
        return Outcome(claim, NOT_MEASURED, why, paper_gpus=paper, plot=plot)

    if not here.gpu_names:
        return not_measured(
            "no GPU in this run: the claim is about GPUs (the cpu profile tests the pipeline)"
        )
    if here.gpu_count < claim.needs_gpus:
        return not_measured(f"needs {claim.needs_gpus} GPUs; {here.gpu_count} here")
    try:
        values, how = _measured_values(claim, tables)
    except NotMeasured as why:
        return not_measured(str(why))
    on_paper_gpu = any(gpu.matches(name) for gpu in paper for name in here.gpu_names)
    factor, judged = None, EXACT
    if claim.kind == RELATIVE:
        judged = RELATIVE
    elif not on_paper_gpu:
        try:
            scaled = scale_factor(claim.scaling, paper[0], here.references)  # type: ignore[arg-type]
        except NoReference as why:
            return not_measured(str(why))
        factor, judged = scaled.value, SCALED
        how = f"{how}; scaled by {factor:.4g} = {scaled.how}"
    low, high = claim.accepted_range(factor)
    inside = all(low <= v <= high for v in values)
    result = WITHIN if inside else OUTSIDE
    if claim.kind == RELATIVE:
        holds = all(claim.direction.holds(v) for v in values)  # type: ignore[union-attr]
        result = DIRECTION_FAILS if not holds else DIRECTION_WITHIN if inside else DIRECTION_OUTSIDE
        how = f"direction {claim.direction.describe()} {'holds' if holds else 'does not hold'}; {how}"  # type: ignore[union-attr]
    accepted = f"accepted {_bound(low)} to {_bound(high)} {claim.unit}"
    return Outcome(
        claim,
        result,
        f"{accepted}; {how}",
        judged,
        paper,
        here.describe(),
        tuple(values),
        (low, high),
        factor,
        plot,
    )


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
