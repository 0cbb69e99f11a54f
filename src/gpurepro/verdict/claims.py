"""Claim files (config/expected/*.yaml): loading and checking, with errors that name the file and key.

A claim says what kind it is (relative or absolute), where its measured value comes from (a study table,
a metric and statistic, filters on the other columns), what was claimed (a value, a range or a bound),
the tolerance and why, the paper's GPU (a file of the hardware table), how an absolute figure scales to
another GPU or what a relative one says qualitatively, the source and the plot that shows it. Adding a
claim is adding YAML: nothing in the code knows about any particular study or table.

The format is defined once: workflow/schemas/claims.schema.yaml checks a file and words its errors, and
the dataclasses below are built from the checked YAML by their fields (built.py), each reading the key
of its name or the one its `key(...)` names. What follows the schema here is what a schema cannot say:
defaults taken from elsewhere in the file (a ratio's other side from its measure, a claim's source from
the file's), figures computed from the source's numbers, and checks across claims and tables.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import GpureproError
from ..hardware import Gpu, load_hardware
from ..profiles import project_root
from ..schema import first_error, read_yaml
from .built import build, key, words
from .points import PointKeys, check_selection
from .ranges import Expected, Tolerance, accepted_range, expected_ends, number

REDUCTIONS = ("single", "each", "min", "max", "median", "mean")
RELATIVE, ABSOLUTE = "relative", "absolute"
REPRODUCTION, REGRESSION = "reproduction", "regression"


class Interval(NamedTuple):
    """Statistics of a selection's rows that bound its value's interval (e.g. ci_low, ci_high)."""

    low: str
    high: str


@dataclass(frozen=True)
class Selection:
    """Rows of `tables/<table>.csv` with this metric and statistic whose other columns match `where`."""

    table: str
    metric: str
    statistic: str
    where: dict[str, Any] = field(default_factory=dict)
    reduce: str = "single"
    # statistics of the same rows that bound the value's interval over reps and runs (e.g. ci_low, ci_high)
    interval: Interval | None = None

    def with_where(self, where: dict[str, Any]) -> Selection:
        """The same selection with `where` merged over its own (another point of the same table)."""
        return Selection(
            self.table, self.metric, self.statistic, {**self.where, **where}, self.reduce, self.interval
        )

    def describe(self) -> str:
        filters = ", ".join(f"{k}={v}" for k, v in self.where.items())
        return f"tables/{self.table}.csv: {self.metric} {self.statistic}" + (
            f" where {filters}" if filters else ""
        )


@dataclass(frozen=True)
class Scaling:
    """How an absolute figure moves to another GPU: times (rate here / rate there) ^ exponent for each
    reference rate, with the scaling's own relative uncertainty."""

    exponents: dict[str, float] = key("with")
    # "calibrated" reads NaN here and in `calibrated` until loading.load_claims reads the calibration
    uncertainty: float = key("uncertainty", lambda value: math.nan if value == "calibrated" else value)
    why: str = ""
    # a claim of the same source table on a GPU nearer this one, whose reading this claim takes where
    # its own datasheet scaling would bridge more GPU generations than the rule was checked on
    through: str | None = None
    # the datasheet rule calibrated (pairs.py): its datasheet ratios taken to this power, `uncertainty`
    # the calibration's residual spread; NaN until the calibration is read (uncertainty: calibrated)
    calibrated: float | None = key(
        "uncertainty", lambda v: math.nan if v == "calibrated" else None, default=None
    )

    @property
    def describe_uncertainty(self) -> str:
        calibrated = " (the calibrated rule's residual)" if self.calibrated is not None else ""
        return f"±{self.uncertainty * 100:.2g}% scaling{calibrated}"


@dataclass(frozen=True)
class Test:
    """A direction read from a test's p-value rather than from the value's interval: a statistic of the
    measure's rows (e.g. the permutation p-value of "the GPUs alike"), below `alpha` for the direction
    to hold. Where the value cannot leave one side of its threshold by construction (a max - min spread
    is above 0 for identical GPUs too), only such a test can tell."""

    statistic: str
    alpha: float
    says: str  # what a p-value below alpha shows, in words


@dataclass(frozen=True)
class Direction:
    """What a relative claim says qualitatively: the value is above (or below) a threshold."""

    above: float | None = None
    below: float | None = None
    test: Test | None = None

    @property
    def threshold(self) -> float:
        return self.above if self.above is not None else self.below  # type: ignore[return-value]

    def holds(self, value: float) -> bool:
        return value > self.threshold if self.above is not None else value < self.threshold

    def describe(self) -> str:
        return f"> {self.above:g}" if self.above is not None else f"< {self.below:g}"


INFORMATIONAL, NOT_COMPARABLE, HOST_BOUND = "informational", "not_comparable", "host_bound"


@dataclass(frozen=True)
class OffPaperGpu:
    """How a claim reads on a GPU other than the paper's, where no scaling makes it comparable:
    informational (shown, never counted), not comparable (with why), or host-bound (not comparable, with
    the share of host time from a CUDA graph point of the same model: `graph`, merged over the timing).
    `timing` is the eager latency whose host share is read: the measure itself for a latency claim; for
    a claim on a property of that same timing (its block-to-block IQR over its median), the latency it
    is a property of, so that both claims are read by one rule: a timing the host paces says nothing of
    the GPU, neither its median nor its spread."""

    reading: str
    why: str
    graph: dict[str, Any] = field(default_factory=dict)
    timing: Selection | None = None


@dataclass(frozen=True)
class Difference:
    """One way the workload measured here differs from the paper's; `moves`: it moves the figure the
    claim reads, so the claim reads "not comparable" until the difference is removed."""

    what: str
    moves: bool
    why: str


@dataclass(frozen=True)
class Protocol:
    """What the paper measured beside what runs here (model and its source, batch, precision, memory
    format, data, implementation, steps, GPU), and each difference; `quick`: what a quick run reduces."""

    paper: str
    here: str
    differences: tuple[Difference, ...] = ()
    quick: str | None = None

    @property
    def moving(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.moves)


@dataclass(frozen=True)
class Revision:
    """A change to a claim's protocol, tolerance or statistic after it met real tables (pre-registration:
    the claim as first judged is the registered one): when, what, why, and the readings either side."""

    date: str
    change: str
    why: str
    before: str
    after: str


@dataclass(frozen=True)
class Population:
    """A claim about a population of GPUs (a cluster's tail): untestable on fewer GPUs, with why."""

    gpus: int
    why: str


@dataclass(frozen=True)
class Beside:
    """A statistic of a figure's rows printed beside it, with what it is (e.g. ours beside SC22's)."""

    statistic: str
    says: str
    interval: Interval | None = None


@dataclass(frozen=True)
class OnCampaign:
    """How a claim reads on a campaign (a cluster's GPUs measured node by node): its value from the
    campaign's tables, the GPUs it takes to judge (a Population: fewer read "not testable here"), its
    own direction where the run's reads a statistic no campaign table has, what the figure is, and the
    figures printed beside it."""

    measure: Selection
    needs: Population | None = None
    direction: Direction | None = None
    definition: str | None = None
    beside: tuple[Beside, ...] = ()


@dataclass(frozen=True)
class Sweep:
    """A claim about a point's place in a sweep (a plateau): judged only where the run swept at least
    `at_least` values of `column` at the point's other keys."""

    column: str
    at_least: int


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    kind: str
    study: str
    gpus: tuple[str, ...] = key("gpu")  # the paper's GPUs: ids of the hardware table
    measure: Selection
    expected: Expected = Expected()
    tolerance: Tolerance = Tolerance()
    unit: str = ""
    source: dict[str, Any] = field(default_factory=dict)  # title, authors, venue, where, url, note, versions
    file: str = ""
    purpose: str = REPRODUCTION
    divide_by: Selection | None = None
    subtract: Selection | None = None
    scaling: Scaling | None = None
    direction: Direction | None = None
    # an ordering claim: the value at each of these points (merged over measure.where) exceeds the last
    order: tuple[dict[str, Any], ...] = ()
    off_paper_gpu: OffPaperGpu | None = None
    needs_gpus: int = key("needs.gpus", default=0)
    needs_setup: str | None = key("needs.setup", default=None)  # what no run here sets up (MIG partitions)
    needs_population: Population | None = key("needs.population", default=None)
    needs_sweep: Sweep | None = key("needs.sweep", default=None)
    plot: str | None = None
    note: str | None = None
    campaign: OnCampaign | None = None  # how a campaign's tables judge it, where they can
    protocol: Protocol | None = None
    # shown but not counted toward the paper's verdict, and why (an order that holds on any GPU by the
    # models' sizes tests nothing of the paper)
    not_counted: str | None = None
    revisions: tuple[Revision, ...] = ()

    @property
    def shown_unit(self) -> str:
        """What follows a figure: " <unit>", or nothing for a plain number (unit "1")."""
        return "" if self.unit == "1" else f" {self.unit}"

    @property
    def paper(self) -> str:
        """The paper's name in the per-paper summary."""
        return self.source.get("short") or self.source["title"]

    def accepted_range(self, factor: float | None = None) -> tuple[float, float]:
        """The interval a measured value must fall in (ranges.accepted_range): the expected value or range
        widened by the tolerance and, scaled to another GPU by `factor`, by the scaling's uncertainty."""
        uncertainty = self.scaling.uncertainty if factor is not None and self.scaling is not None else 0.0
        return accepted_range(self.expected, self.tolerance, factor, uncertainty)

    def describe_expected(self, factor: float | None = None) -> str:
        """The claimed value or range with its tolerance; scaled by `factor` when given."""
        if self.order:
            return "increasing in the order " + " < ".join(_describe_point(point) for point in self.order)
        scale = 1.0 if factor is None else factor
        low, high = (end * scale for end in expected_ends(self.expected))
        unit = self.unit
        shown = self.shown_unit
        if self.expected.value is not None:
            text = f"{number(low)}{shown}"
            if self.expected.formula and factor is None:
                text += f" (= {self.expected.formula})"
        elif math.isfinite(low) and math.isfinite(high):
            text = f"{number(low)}–{number(high)}{shown}"
        elif math.isfinite(high):
            text = f"≤ {number(high)}{shown}"
        else:
            text = f"≥ {number(low)}{shown}"
        if self.expected.across is not None:
            stated_high = self.expected.stated_high * scale  # type: ignore[operator]
            text += (
                f" (the paper states {number(low)}–{number(stated_high)}{shown} across "
                f"{self.expected.across}: one workload on another GPU is held to its lower end, and "
                "reads above the paper's range beyond its high end)"
            )
        tolerance = self.tolerance.describe(unit)
        parts = [] if tolerance == "exact" else [tolerance]
        if factor is not None and self.scaling is not None and self.scaling.uncertainty:
            parts.append(self.scaling.describe_uncertainty)
        return f"{text} ({' and '.join(parts)})" if parts else text


def _describe_point(where: dict[str, Any]) -> str:
    return " ".join(str(value) for value in where.values())


_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def computed_value(formula: str) -> float:
    """The value of an arithmetic expression of numbers ("(87 - 61) * 4.37e-3"): + - * / and brackets
    only, so a claim file states the source's own numbers and the verdict does the arithmetic."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise ValueError(f"only numbers, + - * / and brackets are allowed, not {ast.unparse(node)!r}")

    try:
        return value(ast.parse(formula, mode="eval").body)
    except (SyntaxError, ZeroDivisionError) as error:
        raise ValueError(str(error)) from error


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


def read_claims(
    paths: list[Path | str],
    schema: Path | str | None = None,
    hardware: dict[str, Gpu] | None = None,
    points: PointKeys | None = None,
) -> list[Claim]:
    """Every claim of the files (or folders of files) given, checked against the schema and for the
    rules a schema cannot say (ranges the right way round, one kind of tolerance, unique ids, a hardware
    entry with the rates its scaling needs for every GPU named, and, given each table's point keys
    (points.py), a where that selects one point). `hardware` defaults to the table in config/hardware/.
    A scaling whose uncertainty reads `calibrated` is left uncalibrated here: loading.load_claims gives it
    the datasheet rule's calibration, which is fitted on claims read by this very function."""
    schema = Path(schema) if schema else default_schema()
    hardware = load_hardware() if hardware is None else hardware
    claims: list[Claim] = []
    seen: dict[str, str] = {}
    for file in claim_files(paths):
        for index, claim in enumerate(_load_file(file, schema)):
            if claim.id in seen:
                raise GpureproError(
                    f"bad claim file {file}: claim id '{claim.id}' is already used in {seen[claim.id]}"
                )
            place = f"bad claim file {file}: claim {claim.id} (claims.{index})"
            _check_hardware(claim, hardware, place)
            if points is not None:
                _check_points(claim, points, place)
            seen[claim.id] = str(file)
            claims.append(claim)
    _check_through(claims)
    return claims


def _check_through(claims: list[Claim]) -> None:
    """A claim read through another (scaling.through) names a claim of the same source, read from the
    same table and metric, that is itself read directly (one chain, no loop)."""
    by_id = {claim.id: claim for claim in claims}
    for claim in claims:
        through = claim.scaling.through if claim.scaling is not None else None
        if through is None:
            continue
        where = f"bad claim file {claim.file}: claim {claim.id}: key scaling.through"
        other = by_id.get(through)
        if other is None:
            raise GpureproError(f"{where}: '{through}' is no claim of the files read")
        same = (other.paper, other.measure.table, other.measure.metric, other.unit) == (
            claim.paper,
            claim.measure.table,
            claim.measure.metric,
            claim.unit,
        )
        if not same or (other.scaling is not None and other.scaling.through is not None):
            raise GpureproError(
                f"{where}: '{through}' must be a claim of the same source, table, metric and unit that is "
                "read directly (no scaling.through of its own)"
            )


def _check_hardware(claim: Claim, hardware: dict[str, Gpu], where: str) -> None:
    """Every GPU a claim names has a hardware entry, with every reference rate its scaling needs."""
    known = ", ".join(sorted(hardware)) or "none"
    for gpu in claim.gpus:
        if gpu not in hardware:
            raise GpureproError(
                f"{where}: key gpu: '{gpu}' has no hardware entry config/hardware/{gpu}.yaml (known: {known})"
            )
    if claim.scaling is None:
        return
    gpu = hardware[claim.gpus[0]]
    for reference in claim.scaling.exponents:
        if reference not in gpu.rates:
            raise GpureproError(
                f"{where}: key scaling.with: {reference}: the hardware entry config/hardware/{gpu.id}.yaml "
                f"has no rate {reference} (it has {', '.join(sorted(gpu.rates))})"
            )
        if claim.scaling.calibrated is not None and gpu.rates[reference].measured is not None:
            raise GpureproError(
                f"{where}: key scaling.uncertainty: calibrated is the datasheet rule's, and "
                f"config/hardware/{gpu.id}.yaml has a measured {reference}: give the uncertainty as a number"
            )


def _check_points(claim: Claim, points: PointKeys, place: str) -> None:
    """Every selection of the claim reads one point (or reduces over points on purpose)."""
    measure = claim.measure
    if not claim.order:  # an ordering's points complete its where
        check_selection(measure.table, measure.where, measure.reduce, points, place, "measure")
    for name, other in (("divide_by", claim.divide_by), ("subtract", claim.subtract)):
        if other is not None:
            check_selection(other.table, other.where, other.reduce, points, place, name)
    for index, point in enumerate(claim.order):
        check_selection(measure.table, {**measure.where, **point}, "single", points, place, f"order.{index}")
    if claim.campaign is not None:
        on = claim.campaign.measure
        check_selection(on.table, on.where, on.reduce, points, place, "campaign.measure")


def _load_file(file: Path, schema: Path) -> list[Claim]:
    data = read_yaml(file, "claim file")
    problem = first_error(data, schema)
    if problem:
        raise GpureproError(f"bad claim file {file}: {problem}{_claim_id_hint(data, problem)}")
    return [_claim(item, index, file, data) for index, item in enumerate(data["claims"])]


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


def _claim(item: dict[str, Any], index: int, file: Path, data: dict[str, Any]) -> Claim:
    """One claim as the schema checked it, built by its fields, with what the schema cannot say: the
    file's source and purpose under the claim's own, the other sides' defaults from its measure, the
    figure computed from the source's numbers."""
    where = f"bad claim file {file}: claim {item['id']} (claims.{index})"
    measure = build(Selection, item["measure"])
    off = item.get("off_paper_gpu")
    return build(
        Claim,
        item,
        measure=measure,
        source=_source(data.get("source", {}), item.get("source", {}), where),
        file=file.name,
        purpose=data.get("purpose", REPRODUCTION),
        expected=_expected(item["expected"], where) if "expected" in item else Expected(),
        not_counted=_not_counted(item),
        divide_by=_other_side(item, "divide_by", measure, where),
        subtract=_other_side(item, "subtract", measure, where),
        off_paper_gpu=build(OffPaperGpu, off, timing=_other_side(off, "timing", measure, where))
        if off
        else None,
    )


def _not_counted(item: dict[str, Any]) -> str | None:
    """Why the claim is shown but not counted: its own reason, or a figure whose place in its source
    was not found (a figure no reviewer can check is no published claim until it is found)."""
    if "not_counted" in item:
        return words(item["not_counted"])
    missing = item["source"].get("not_found")
    return f"its figure was not found in the source (looked for in: {words(missing)})" if missing else None


def _source(default: dict[str, Any], own: dict[str, Any], where: str) -> dict[str, Any]:
    """The claim's source over the file's, with a title, and a judged version among its versions."""
    source = {**default, **own}
    if "title" not in source:
        raise GpureproError(f"{where}: key source: no source title, in the claim or at the top of the file")
    versions = [version["name"] for version in source.get("versions", [])]
    if versions and source.get("judged") not in versions:
        raise GpureproError(
            f"{where}: key source.judged: {source.get('judged')!r} is not one of the source's versions "
            f"({', '.join(versions)})"
        )
    return source


def _expected(expected: dict[str, Any], where: str) -> Expected:
    """The claimed figure: a value (or one computed from the source's numbers), a range or a bound; a
    range the paper states `across` its models and GPUs is judged at its lower end alone."""
    if "computed" in expected:
        try:
            value = computed_value(expected["computed"])
        except ValueError as error:
            raise GpureproError(
                f"{where}: key expected.computed: {expected['computed']!r}: {error}"
            ) from error
        return Expected(value=value, formula=expected["computed"])
    low, high = expected.get("min"), expected.get("max")
    if low is not None and high is not None and low > high:
        raise GpureproError(f"{where}: key expected: min {low} is more than max {high}")
    if "across" in expected:
        return Expected(low=low, across=words(expected["across"]), stated_high=high)
    return Expected(expected.get("value"), low, high)


def _other_side(item: dict[str, Any], name: str, measure: Selection, where: str) -> Selection | None:
    """The denominator of a ratio (divide_by), the subtrahend of a difference (subtract) or a timing
    read beside the measure: keys left out come from measure, its where merged over measure's."""
    if name not in item:
        return None
    other = item[name]
    selection = build(
        Selection,
        other,
        **{f: getattr(measure, f) for f in ("table", "metric", "statistic", "reduce") if f not in other},
        where={**measure.where, **other.get("where", {})},
        **({} if "interval" in other else {"interval": measure.interval}),
    )
    if "each" in (measure.reduce, selection.reduce):
        raise GpureproError(
            f"{where}: key {name}: a ratio or difference needs one value on each side, not reduce: each"
        )
    return selection
