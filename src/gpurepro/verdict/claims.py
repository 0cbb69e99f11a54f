"""Claim files (config/expected/*.yaml): loading and checking, with errors that name the file and key.

A claim says where its measured value comes from (a study table, a metric and statistic, filters on the
other columns), what was claimed (a value, a range or a bound), the tolerance and why, the source, the
device profiles it applies to and the plot that shows it. Adding a claim is adding YAML: nothing in the
code knows about any particular study or table.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import GpureproError
from ..profiles import project_root
from ..schema import first_error

REDUCTIONS = ("single", "each", "min", "max", "median", "mean")


@dataclass(frozen=True)
class Selection:
    """Rows of `tables/<table>.csv` with this metric and statistic whose other columns match `where`."""

    table: str
    metric: str
    statistic: str
    where: dict[str, Any] = field(default_factory=dict)
    reduce: str = "single"

    def describe(self) -> str:
        filters = ", ".join(f"{k}={v}" for k, v in self.where.items())
        return f"tables/{self.table}.csv: {self.metric} {self.statistic}" + (
            f" where {filters}" if filters else ""
        )


@dataclass(frozen=True)
class Expected:
    """A value, a range (low and high) or a one-sided bound (low or high alone)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Tolerance:
    relative: float = 0.0
    absolute: float = 0.0
    why: str = ""

    def describe(self, unit: str = "") -> str:
        if self.relative:
            return f"±{self.relative * 100:g}%"
        if self.absolute:
            return f"±{self.absolute:g} {unit}".rstrip()
        return "exact"


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    study: str
    profiles: tuple[str, ...]
    measure: Selection
    expected: Expected
    tolerance: Tolerance
    unit: str
    source: dict[str, str]
    file: str
    divide_by: Selection | None = None
    gpu_name: str | None = None
    plot: str | None = None
    note: str | None = None

    def accepted_range(self) -> tuple[float, float]:
        """The interval a measured value must fall in: the expected value or range widened by the
        tolerance (relative tolerances scale with the magnitude of each end)."""
        low, high = _ends(self.expected)
        return self._widen(low, -1), self._widen(high, +1)

    def _widen(self, end: float, direction: int) -> float:
        if math.isinf(end):
            return end
        return end + direction * (self.tolerance.absolute + self.tolerance.relative * abs(end))

    def describe_expected(self) -> str:
        e, unit = self.expected, self.unit
        tolerance = self.tolerance.describe(unit)
        if e.value is not None:
            text = f"{_number(e.value)} {unit}"
        elif e.low is not None and e.high is not None:
            text = f"{_number(e.low)}–{_number(e.high)} {unit}"
        elif e.high is not None:
            text = f"≤ {_number(e.high)} {unit}"
        else:
            text = f"≥ {_number(e.low)} {unit}"
        return text if tolerance == "exact" else f"{text} ({tolerance})"


def _ends(expected: Expected) -> tuple[float, float]:
    if expected.value is not None:
        return expected.value, expected.value
    low = -math.inf if expected.low is None else expected.low
    high = math.inf if expected.high is None else expected.high
    return low, high


def _number(value: float) -> str:
    return f"{value:.4g}"


def default_schema() -> Path:
    return project_root() / "workflow" / "schemas" / "claims.schema.yaml"


def claim_files(paths: list[Path | str]) -> list[Path]:
    """YAML files named, or found in folders named, sorted so the verdict lists claims in a fixed order."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        elif path.is_file():
            files.append(path)
        else:
            raise GpureproError(f"claim file or folder {path} does not exist")
    return files


def load_claims(paths: list[Path | str], schema: Path | str | None = None) -> list[Claim]:
    """Every claim of the files (or folders of files) given, checked against the schema and for the
    rules a schema cannot say (ranges the right way round, one kind of tolerance, unique ids)."""
    schema = Path(schema) if schema else default_schema()
    claims: list[Claim] = []
    seen: dict[str, str] = {}
    for file in claim_files(paths):
        for claim in _load_file(file, schema):
            if claim.id in seen:
                raise GpureproError(
                    f"bad claim file {file}: claim id '{claim.id}' is already used in {seen[claim.id]}"
                )
            seen[claim.id] = str(file)
            claims.append(claim)
    return claims


def _load_file(file: Path, schema: Path) -> list[Claim]:
    try:
        data = yaml.safe_load(file.read_text())
    except yaml.YAMLError as err:
        raise GpureproError(f"bad claim file {file}: not valid YAML: {err}") from None
    problem = first_error(data, schema)
    if problem:
        raise GpureproError(f"bad claim file {file}: {problem}{_claim_id_hint(data, problem)}")
    default_source = data.get("source", {})
    return [_claim(item, index, file, default_source) for index, item in enumerate(data["claims"])]


def _claim_id_hint(data: Any, problem: str) -> str:
    """' (claim <id>)' when the error is inside a claim that has an id, so it can be found by name."""
    prefix = "key claims."
    if not problem.startswith(prefix) or not isinstance(data, dict):
        return ""
    index = problem[len(prefix) :].split(".", 1)[0].split(":", 1)[0]
    try:
        claim_id = data["claims"][int(index)].get("id")
    except (ValueError, IndexError, KeyError, AttributeError, TypeError):
        return ""
    return f" (claim {claim_id})" if claim_id else ""


def _claim(item: dict[str, Any], index: int, file: Path, default_source: dict[str, str]) -> Claim:
    where = f"bad claim file {file}: claim {item['id']} (claims.{index})"
    expected = item["expected"]
    if "value" in expected and len(expected) > 1:
        raise GpureproError(f"{where}: key expected: give a value, or min and/or max, not both")
    if "min" in expected and "max" in expected and expected["min"] > expected["max"]:
        raise GpureproError(
            f"{where}: key expected: min {expected['min']} is more than max {expected['max']}"
        )
    tolerance = item["tolerance"]
    if "relative" in tolerance and "absolute" in tolerance:
        raise GpureproError(f"{where}: key tolerance: give relative or absolute, not both")
    if "gpu_name" in item:
        try:
            re.compile(item["gpu_name"])
        except re.error as err:
            raise GpureproError(f"{where}: key gpu_name: not a regular expression: {err}") from None
    source = {**default_source, **item.get("source", {})}
    if "title" not in source:
        raise GpureproError(f"{where}: key source: no source title, in the claim or at the top of the file")
    measure = _selection(item["measure"])
    divide_by = None
    if "divide_by" in item:
        other = item["divide_by"]
        divide_by = Selection(
            table=other.get("table", measure.table),
            metric=other.get("metric", measure.metric),
            statistic=other.get("statistic", measure.statistic),
            where={**measure.where, **other.get("where", {})},
            reduce=other.get("reduce", measure.reduce),
        )
        if "each" in (measure.reduce, divide_by.reduce):
            raise GpureproError(
                f"{where}: key divide_by: a ratio needs one value on each side, not reduce: each"
            )
    return Claim(
        id=item["id"],
        claim=item["claim"],
        study=item["study"],
        profiles=tuple(item["profiles"]),
        measure=measure,
        expected=Expected(expected.get("value"), expected.get("min"), expected.get("max")),
        tolerance=Tolerance(tolerance.get("relative", 0.0), tolerance.get("absolute", 0.0), tolerance["why"]),
        unit=item["unit"],
        source=source,
        file=file.name,
        divide_by=divide_by,
        gpu_name=item.get("gpu_name"),
        plot=item.get("plot"),
        note=item.get("note"),
    )


def _selection(data: dict[str, Any]) -> Selection:
    return Selection(
        table=data["table"],
        metric=data["metric"],
        statistic=data["statistic"],
        where=dict(data.get("where", {})),
        reduce=data.get("reduce", "single"),
    )
