"""Claim files (config/expected/*.yaml): loading and checking, with errors that name the file and key.

A claim says what kind it is (relative or absolute), where its measured value comes from (a study table,
a metric and statistic, filters on the other columns), what was claimed (a value, a range or a bound),
the tolerance and why, the paper's GPU (a file of the hardware table), how an absolute figure scales to
another GPU or what a relative one says qualitatively, the source and the plot that shows it. Adding a
claim is adding YAML: nothing in the code knows about any particular study or table.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GpureproError
from ..hardware import Gpu, load_hardware
from ..profiles import project_root
from ..schema import first_error, read_yaml
from .points import PointKeys, check_selection
from .ranges import Expected, Tolerance, accepted_range, expected_ends, number

REDUCTIONS = ("single", "each", "min", "max", "median", "mean")
RELATIVE, ABSOLUTE = "relative", "absolute"
REPRODUCTION, REGRESSION = "reproduction", "regression"


@dataclass(frozen=True)
class Selection:
    """Rows of `tables/<table>.csv` with this metric and statistic whose other columns match `where`."""

    table: str
    metric: str
    statistic: str
    where: dict[str, Any] = field(default_factory=dict)
    reduce: str = "single"
    # statistics of the same rows that bound the value's interval over reps and runs (e.g. ci_low, ci_high)
    interval: tuple[str, str] | None = None

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

    exponents: dict[str, float]
    uncertainty: float
    why: str
    # a claim of the same source table on a GPU nearer this one, whose reading this claim takes where
    # its own datasheet scaling would bridge more GPU generations than the rule was checked on
    through: str | None = None
    # the datasheet rule calibrated (pairs.py): its datasheet ratios taken to this power, `uncertainty`
    # the calibration's residual spread; NaN until the calibration is read (uncertainty: calibrated)
    calibrated: float | None = None

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
    interval: tuple[str, str] | None = None


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
    gpus: tuple[str, ...]  # the paper's GPUs: ids of the hardware table
    measure: Selection
    expected: Expected
    tolerance: Tolerance
    unit: str
    source: dict[str, Any]  # title, authors, venue, where, url, note: text; versions: a list of them
    file: str
    purpose: str = REPRODUCTION
    divide_by: Selection | None = None
    subtract: Selection | None = None
    scaling: Scaling | None = None
    direction: Direction | None = None
    # an ordering claim: the value at each of these points (merged over measure.where) exceeds the last
    order: tuple[dict[str, Any], ...] = ()
    off_paper_gpu: OffPaperGpu | None = None
    needs_gpus: int = 0
    needs_setup: str | None = None  # what no run of this pipeline sets up (e.g. MIG partitions)
    needs_population: Population | None = None
    needs_sweep: Sweep | None = None
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
    for key, other in (("divide_by", claim.divide_by), ("subtract", claim.subtract)):
        if other is not None:
            check_selection(other.table, other.where, other.reduce, points, place, key)
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
    default_source = data.get("source", {})
    purpose = data.get("purpose", REPRODUCTION)
    return [_claim(item, index, file, default_source, purpose) for index, item in enumerate(data["claims"])]


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


def _claim(
    item: dict[str, Any], index: int, file: Path, default_source: dict[str, str], purpose: str
) -> Claim:
    where = f"bad claim file {file}: claim {item['id']} (claims.{index})"
    source = {**default_source, **item.get("source", {})}
    if "title" not in source:
        raise GpureproError(f"{where}: key source: no source title, in the claim or at the top of the file")
    versions = [version["name"] for version in source.get("versions", [])]
    if versions and source.get("judged") not in versions:
        raise GpureproError(
            f"{where}: key source.judged: {source.get('judged')!r} is not one of the source's versions "
            f"({', '.join(versions)})"
        )
    measure = _selection(item["measure"])
    scaling = item.get("scaling")
    direction = item.get("direction")
    off = item.get("off_paper_gpu")
    gpus = item["gpu"]
    needs = item.get("needs", {})
    return Claim(
        id=item["id"],
        claim=item["claim"],
        kind=item["kind"],
        study=item["study"],
        gpus=(gpus,) if isinstance(gpus, str) else tuple(gpus),
        measure=measure,
        expected=_expected(item, where),
        tolerance=_tolerance(item, where),
        unit=item["unit"],
        source=source,
        file=file.name,
        purpose=purpose,
        divide_by=_other_side(item, "divide_by", measure, where),
        subtract=_other_side(item, "subtract", measure, where),
        scaling=_scaling(scaling) if scaling else None,
        direction=_direction(direction) if direction else None,
        order=tuple(dict(point) for point in item.get("order", [])),
        off_paper_gpu=OffPaperGpu(
            off["reading"],
            off["why"].strip(),
            dict(off.get("graph", {})),
            _other_side(off, "timing", measure, where),
        )
        if off
        else None,
        needs_gpus=needs.get("gpus", 0),
        needs_setup=needs.get("setup"),
        needs_population=Population(needs["population"]["gpus"], needs["population"]["why"].strip())
        if "population" in needs
        else None,
        needs_sweep=Sweep(needs["sweep"]["column"], needs["sweep"]["at_least"]) if "sweep" in needs else None,
        plot=item.get("plot"),
        note=item.get("note"),
        campaign=_on_campaign(item["campaign"]) if "campaign" in item else None,
        protocol=_protocol(item["protocol"]) if "protocol" in item else None,
        not_counted=_words(item["not_counted"]) if "not_counted" in item else None,
        revisions=tuple(
            Revision(
                str(r["date"]), _words(r["change"]), _words(r["why"]), _words(r["before"]), _words(r["after"])
            )
            for r in item.get("revisions", [])
        ),
    )


def _scaling(data: dict[str, Any]) -> Scaling:
    """A scaling; `uncertainty: calibrated` asks for the datasheet rule's calibration (NaN until read)."""
    calibrated = data["uncertainty"] == "calibrated"
    return Scaling(
        dict(data["with"]),
        math.nan if calibrated else data["uncertainty"],
        data["why"].strip(),
        data.get("through"),
        math.nan if calibrated else None,
    )


def _words(text: str) -> str:
    """A folded YAML text as one line."""
    return " ".join(str(text).split())


def _protocol(data: dict[str, Any]) -> Protocol:
    return Protocol(
        paper=_words(data["paper"]),
        here=_words(data["here"]),
        differences=tuple(
            Difference(_words(d["what"]), bool(d["moves"]), _words(d["why"]))
            for d in data.get("differences", [])
        ),
        quick=_words(data["quick"]) if "quick" in data else None,
    )


def _on_campaign(data: dict[str, Any]) -> OnCampaign:
    needs = data.get("needs")
    return OnCampaign(
        measure=_selection(data["measure"]),
        needs=Population(needs["gpus"], needs["why"].strip()) if needs else None,
        direction=_direction(data["direction"]) if "direction" in data else None,
        definition=" ".join(data["definition"].split()) if "definition" in data else None,
        beside=tuple(
            Beside(b["statistic"], " ".join(b["says"].split()), _interval(b)) for b in data.get("beside", [])
        ),
    )


def _interval(data: dict[str, Any]) -> tuple[str, str] | None:
    return (data["interval"]["low"], data["interval"]["high"]) if "interval" in data else None


def _direction(direction: dict[str, Any]) -> Direction:
    test = direction.get("test")
    return Direction(
        direction.get("above"),
        direction.get("below"),
        Test(test["statistic"], test["alpha"], test["says"].strip()) if test else None,
    )


def _expected(item: dict[str, Any], where: str) -> Expected:
    """The claimed figure; an ordering claim states none (its points' order is the claim)."""
    if "expected" not in item:
        if "order" not in item:
            raise GpureproError(f"{where}: key expected: required (only an ordering claim goes without)")
        return Expected()
    expected = dict(item["expected"])
    across = expected.pop("across", None)
    formula = expected.pop("computed", None)
    if formula is not None:
        if expected:
            raise GpureproError(f"{where}: key expected: give computed alone, not with {', '.join(expected)}")
        try:
            expected["value"] = computed_value(formula)
        except ValueError as error:
            raise GpureproError(f"{where}: key expected.computed: {formula!r}: {error}") from error
    if "value" in expected and len(expected) > 1:
        raise GpureproError(f"{where}: key expected: give a value, or min and/or max, not both")
    if "min" in expected and "max" in expected and expected["min"] > expected["max"]:
        raise GpureproError(
            f"{where}: key expected: min {expected['min']} is more than max {expected['max']}"
        )
    if across is not None:
        if "min" not in expected or "max" not in expected:
            raise GpureproError(
                f"{where}: key expected.across: a range across models and GPUs needs min and max"
            )
        # judged as the paper states it: one workload on another GPU is held to the range's lower end
        return Expected(None, expected["min"], None, formula, across.strip(), expected["max"])
    return Expected(expected.get("value"), expected.get("min"), expected.get("max"), formula)


def _tolerance(item: dict[str, Any], where: str) -> Tolerance:
    tolerance = item.get("tolerance")
    if tolerance is None:
        if "order" not in item:
            raise GpureproError(f"{where}: key tolerance: required (only an ordering claim goes without)")
        return Tolerance()
    if "relative" in tolerance and "absolute" in tolerance:
        raise GpureproError(f"{where}: key tolerance: give relative or absolute, not both")
    return Tolerance(tolerance.get("relative", 0.0), tolerance.get("absolute", 0.0), tolerance["why"].strip())


def _other_side(item: dict[str, Any], key: str, measure: Selection, where: str) -> Selection | None:
    """The denominator of a ratio (divide_by) or the subtrahend of a difference (subtract): keys left
    out come from measure, its where merged over measure's."""
    if key not in item:
        return None
    other = item[key]
    selection = Selection(
        table=other.get("table", measure.table),
        metric=other.get("metric", measure.metric),
        statistic=other.get("statistic", measure.statistic),
        where={**measure.where, **other.get("where", {})},
        reduce=other.get("reduce", measure.reduce),
        interval=_interval(other) or measure.interval,
    )
    if "each" in (measure.reduce, selection.reduce):
        raise GpureproError(
            f"{where}: key {key}: a ratio or difference needs one value on each side, not reduce: each"
        )
    return selection


def _selection(data: dict[str, Any]) -> Selection:
    return Selection(
        table=data["table"],
        metric=data["metric"],
        statistic=data["statistic"],
        where=dict(data.get("where", {})),
        reduce=data.get("reduce", "single"),
        interval=_interval(data),
    )
