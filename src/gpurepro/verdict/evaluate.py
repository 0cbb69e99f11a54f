"""Check claims against a run's tables, on whatever GPU the run measured, so that every reading survives
the paper's authors reading it.

How a claim is judged depends on its kind and on the GPU:
- relative (a ratio within one run): on every GPU, its direction (e.g. a speedup above 1) apart from its
  magnitude. A direction is read only where it is resolved: the value's interval over reps and runs
  (the claim's measure.interval) excludes the threshold; without an interval, a value within
  NEAR_THRESHOLD of the threshold is not read at all.
- an ordering (DeiT-T < DeiT-S < DeiT-B): each step read only where it is resolved: where both points
  name their processes (an across-process table), the interval of their difference over those processes
  (process_stats.difference_interval) excludes 0; else the two points' intervals part.
- a difference or ratio of two points (subtract, divide_by): its interval over the two points'
  processes where both name them, else the widest the two points' intervals allow.
- absolute, on the paper's GPU: "within tolerance" or "outside tolerance", as published.
- absolute, on another GPU: scaled through reference rates (scaling.py), "scaled" only when a measured
  rate entered the factor; or, where nothing makes it comparable (claim.off_paper_gpu), informational
  or "not comparable" with why (a host-bound latency says how much of it is host time).
Any range that cannot fail (ranges.py) is "not testable here", never held. Any claim is "not measured"
when its value cannot be read here, and the detail says why (reading.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from .. import process_stats
from .claims import INFORMATIONAL, RELATIVE, Claim, Direction
from .claims import NOT_COMPARABLE as NOT_COMPARABLE_READING
from .hardware import Gpu
from .ranges import accepted_range, untestable_reason
from .reading import NotMeasured, Values, read
from .scaling import NoReference, measured_references, scale_factor

WITHIN = "within tolerance"
OUTSIDE = "outside tolerance"
DIRECTION_WITHIN = "direction holds, magnitude within tolerance"
DIRECTION_OUTSIDE = "direction holds, magnitude outside tolerance"
DIRECTION_UNTESTED = "direction holds, magnitude not testable here"
DIRECTION_UNRESOLVED = "direction holds, magnitude not resolved at this sample size"
DIRECTION_FAILS = "direction does not hold"
ORDER_HOLDS = "order holds"
ORDER_FAILS = "order does not hold"
NOT_RESOLVED = "not resolved at this sample size"
NOT_TESTABLE = "not testable here"
NOT_COMPARABLE = "not comparable"
SHOWN = "informational"
NOT_MEASURED = "not measured"

# How far each result supports its claim, for the per-paper summary. Only the first three are testable.
HELD, PARTLY, NOT_HELD = "held", "partly held", "not held"
UNRESOLVED, UNTESTABLE, INFO, UNMEASURED = "not resolved", "not testable", "informational", "not measured"
TESTABLE = (HELD, PARTLY, NOT_HELD)
_GRADES = {
    WITHIN: HELD,
    DIRECTION_WITHIN: HELD,
    ORDER_HOLDS: HELD,
    DIRECTION_OUTSIDE: PARTLY,
    DIRECTION_UNTESTED: PARTLY,
    DIRECTION_UNRESOLVED: PARTLY,
    OUTSIDE: NOT_HELD,
    DIRECTION_FAILS: NOT_HELD,
    ORDER_FAILS: NOT_HELD,
    NOT_RESOLVED: UNRESOLVED,
    NOT_TESTABLE: UNTESTABLE,
    NOT_COMPARABLE: UNTESTABLE,
    SHOWN: INFO,
    NOT_MEASURED: UNMEASURED,
}
EXACT, SCALED, TRANSFERRED, OFF_PAPER = "exact", "scaled", "unscaled", "off the paper's GPU"
# Without an interval, a ratio this close to its threshold (relative) is not read: one run's noise.
NEAR_THRESHOLD = 0.05


@dataclass(frozen=True)
class Here:
    """What a run measured on: its GPUs' NVML names, how many GPUs it had, its reference rates."""

    gpu_names: tuple[str, ...]
    gpu_count: int
    references: dict[str, float]

    @classmethod
    def of(cls, tables: dict[str, pd.DataFrame], gpu_count: int | None = None) -> Here:
        """From the tables (every GPU name they record); the GPU count, unless the workflow says how
        many GPUs the run had, is the number of distinct GPUs (by UUID) the tables name."""
        names = gpu_names(tables)
        count = gpu_count if gpu_count is not None else count_gpus(tables)
        return cls(names, count, measured_references(tables))

    def describe(self) -> str:
        return ", ".join(self.gpu_names) or "no GPU"


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    result: str  # one of the results above
    detail: str
    judged: str = ""  # EXACT, SCALED, TRANSFERRED, OFF_PAPER or RELATIVE; empty when not measured
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
        if self.judged == TRANSFERRED:
            return f"from {self.paper_gpus[0].name}, unscaled: {self.result}"
        return self.result

    @property
    def grade(self) -> str:
        return _GRADES[self.result]

    def describe_paper_gpus(self) -> str:
        return ", ".join(gpu.name for gpu in self.paper_gpus)

    def describe_basis(self) -> str:
        """Which GPUs the judgement rests on, e.g. "measured on NVIDIA H200; paper: V100 SXM2"."""
        if not self.measured_on:
            return f"paper: {self.describe_paper_gpus()}"
        return f"measured on {self.measured_on}; paper: {self.describe_paper_gpus()}"

    def describe_expected(self) -> str:
        """The expectation here: the published one, or scaled to this GPU, with the range it accepts."""
        text = self.claim.describe_expected(self.factor)
        if self.judged and not self.claim.order and self.result not in (SHOWN, NOT_COMPARABLE):
            low, high = self.accepted
            text += f"; accepted {_bound(low)} to {_bound(high)}{self.claim.shown_unit}"
        return text

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
            return f"{self.values[0]:.4g}{self.claim.shown_unit}"
        if self.claim.order:
            return " < ".join(f"{v:.4g}" for v in self.values) + self.claim.shown_unit
        spread = f"{min(self.values):.4g}–{max(self.values):.4g}{self.claim.shown_unit}"
        return f"{spread} ({len(self.values)} values)"


def gpu_names(tables: dict[str, pd.DataFrame]) -> tuple[str, ...]:
    """The NVML names of the GPUs this run measured, from every table that records them (the CPU,
    which the tables name 'cpu', is not a GPU)."""
    names: set[str] = set()
    for table in tables.values():
        if "gpu_name" in table.columns:
            names.update(str(n) for n in table["gpu_name"].dropna().unique())
    return tuple(sorted(names - {"cpu"}))


def count_gpus(tables: dict[str, pd.DataFrame]) -> int:
    """Distinct GPUs by UUID (two GPUs of one model share a name); by name where no table has UUIDs."""
    uuids: set[str] = set()
    for table in tables.values():
        if {"gpu_uuid", "gpu_name"} <= set(table.columns):
            gpus = table[table["gpu_name"].astype(str) != "cpu"]
            uuids.update(str(u) for u in gpus["gpu_uuid"].dropna().unique() if str(u).strip())
    return len(uuids) or len(gpu_names(tables))


def evaluate(
    claims: list[Claim],
    tables: dict[str, pd.DataFrame],
    hardware: dict[str, Gpu],
    gpu_count: int | None = None,
    plots: dict[str, str] | None = None,
    rules: dict[str, str] | None = None,
) -> list[Outcome]:
    """The outcome of each claim, in the order given, for a run whose tables (by name: tables/<name>.csv)
    and plots (by name: plots/<name>.png -> the path to link) are given. `gpu_count`: GPUs the run had
    (default: those its tables name); `rules`: the rule that writes each table, for not-measured hints."""
    here = Here.of(tables, gpu_count)
    judge = _Judge(here, tables, rules or {})
    return [judge.outcome(claim, hardware, plots or {}) for claim in claims]


@dataclass
class _Judge:
    here: Here
    tables: dict[str, pd.DataFrame]
    rules: dict[str, str]

    def outcome(self, claim: Claim, hardware: dict[str, Gpu], plots: dict[str, str]) -> Outcome:
        paper = tuple(hardware[gpu] for gpu in claim.gpus)
        plot = plots.get(claim.plot) if claim.plot else None

        def result(result: str, detail: str, judged: str = "", **more: object) -> Outcome:
            on = self.here.describe() if judged else ""
            return Outcome(claim, result, detail, judged, paper, on, plot=plot, **more)  # type: ignore[arg-type]

        why_not = self._unmeasurable(claim)
        if why_not:
            return result(NOT_MEASURED, why_not)
        on_paper_gpu = any(gpu.matches(name) for gpu in paper for name in self.here.gpu_names)
        off = None if on_paper_gpu else claim.off_paper_gpu
        if off is not None and off.reading == NOT_COMPARABLE_READING:
            # nothing to read: the figure belongs to the paper's GPU
            return result(NOT_COMPARABLE, f"off {paper[0].name}: {off.why}", OFF_PAPER)
        try:
            if claim.order:
                verdict, detail, ordered = self._order(claim)
                return result(verdict, detail, RELATIVE, values=ordered)
            values, how = self._values(claim)
        except NotMeasured as why:
            return result(NOT_MEASURED, str(why))
        numbers = tuple(values.values)
        if off is not None:
            text, reading = self._off_paper(claim, paper[0], values, how)
            return result(reading, text, OFF_PAPER, values=numbers)
        factor, judged, uncertainty = None, EXACT if claim.kind != RELATIVE else RELATIVE, 0.0
        if claim.kind != RELATIVE and not on_paper_gpu and claim.scaling is not None:
            try:
                scaled = scale_factor(claim.scaling, paper[0], self.here.references)
            except NoReference as why:
                return result(NOT_MEASURED, str(why))
            uncertainty = claim.scaling.uncertainty
            if scaled.rates:
                factor, judged = scaled.value, SCALED
                how = f"{how}; scaled by {factor:.4g} = {scaled.how}"
            else:
                judged = TRANSFERRED
                how = f"{how}; {scaled.how}"
        accepted = accepted_range(claim.expected, claim.tolerance, factor, uncertainty)
        verdict, how = _judge_values(claim, values, accepted, factor, how)
        detail = f"accepted {_bound(accepted[0])} to {_bound(accepted[1])}{claim.shown_unit}; {how}"
        return result(verdict, detail, judged, values=numbers, accepted=accepted, factor=factor)

    def _unmeasurable(self, claim: Claim) -> str:
        if not self.here.gpu_names:
            return "no GPU in this run: the claim is about GPUs (the cpu profile tests the pipeline)"
        if claim.needs_setup:
            return f"needs {claim.needs_setup}"
        if self.here.gpu_count < claim.needs_gpus:
            return f"needs {claim.needs_gpus} GPUs; {self.here.gpu_count} here"
        return ""

    def _values(self, claim: Claim) -> tuple[Values, str]:
        numerator = read(claim.measure, claim.study, self.tables, self.rules)
        other = claim.divide_by or claim.subtract
        if other is None:
            if numerator.unit != claim.unit:
                raise NotMeasured(
                    f"{claim.measure.describe()} is in {numerator.unit}, the claim in {claim.unit}"
                )
            return numerator, f"from {claim.measure.describe()}"
        second = read(other, claim.study, self.tables, self.rules)
        if numerator.unit != second.unit:
            raise NotMeasured(f"cannot combine {numerator.unit} with {second.unit}")
        a, b = numerator.values[0], second.values[0]
        if claim.divide_by is not None:
            if b == 0:
                raise NotMeasured(f"{other.describe()} is 0")
            value, sign = a / b, "/"
        else:
            value, sign = a - b, "-"
        how = (
            f"{a:.4g} {numerator.unit} ({claim.measure.describe()}) {sign} {b:.4g} {second.unit} "
            f"({other.describe()})"
        )
        return Values([value], claim.unit, _combined_interval(numerator, second, sign)), how

    def _order(self, claim: Claim) -> tuple[str, str, tuple[float, ...]]:
        """The result, its detail and the points' values: each point's value must exceed the one before;
        a step counts only where it is resolved (_order_step)."""
        points = [
            read(claim.measure.with_where(where), claim.study, self.tables, self.rules)
            for where in claim.order
        ]
        values = [p.values[0] for p in points]
        steps, unresolved, reversed_ = [], 0, 0
        for first, second in zip(points, points[1:], strict=False):
            step, resolved = _order_step(first, second)
            steps.append(step)
            unresolved += resolved is None
            reversed_ += resolved is False
        verdict = ORDER_FAILS if reversed_ else NOT_RESOLVED if unresolved else ORDER_HOLDS
        detail = f"{'; '.join(steps)} {claim.unit} (95% intervals) from {claim.measure.describe()}"
        return verdict, detail, tuple(values)

    def _off_paper(self, claim: Claim, paper: Gpu, values: Values, how: str) -> tuple[str, str]:
        """How a claim with nothing to make it comparable reads off the paper's GPU: its value shown
        beside the paper's figure, or a host-bound figure with how much of it is host time."""
        off = claim.off_paper_gpu
        assert off is not None
        published = claim.describe_expected()
        if off.reading == INFORMATIONAL:
            return (
                f"{published} on {paper.name}, shown beside this GPU's value, never counted: "
                f"{off.why}; {how}",
                SHOWN,
            )
        return f"host-bound ({self._host_share(claim, values)}): {off.why}; {how}", NOT_COMPARABLE

    def _host_share(self, claim: Claim, values: Values) -> str:
        """The share of an eager latency that is host time: 1 - the CUDA graph latency / the eager one.
        The eager latency is the claim's own value, or the timing it names (off_paper_gpu.timing) where
        the claim reads a property of that timing rather than the timing itself."""
        off = claim.off_paper_gpu
        assert off is not None
        timing = off.timing or claim.measure
        graph = timing.with_where(off.graph)
        try:
            eager = values if off.timing is None else read(timing, claim.study, self.tables, self.rules)
        except NotMeasured as why:
            return f"host time unknown: no eager timing here ({why})"
        try:
            graphed = read(graph, claim.study, self.tables, self.rules).values[0]
        except NotMeasured as why:
            return f"host time unknown: no CUDA graph point of this model here ({why})"
        share = (1 - graphed / eager.values[0]) * 100
        return f"{share:.0f}% host time: eager {eager.values[0]:.4g} {eager.unit}, CUDA graph {graphed:.4g}"


def _order_step(first: Values, second: Values) -> tuple[str, bool | None]:
    """One step of an ordering, in words, and whether the second point lies above the first (True),
    below it (False) or neither is resolved (None): by the interval of their difference over their
    processes where both name them, else by whether the two points' intervals part."""
    a, b = first.values[0], second.values[0]
    if first.processes and second.processes:
        between = process_stats.difference_interval(second.processes[0], first.processes[0])
        low, high = between.low, between.high
        if not (math.isfinite(low) and math.isfinite(high)):
            return f"{a:.4g} then {b:.4g} (no interval of the difference)", None
        words = f"{a:.4g} then {b:.4g}, difference [{low:.4g}, {high:.4g}]"
        if low > 0:
            return words, True
        if high < 0:
            return f"{words} (reversed)", False
        return f"{words} (includes 0)", None
    (low_a, high_a), (low_b, high_b) = (
        p.intervals[0] if p.intervals else (math.nan, math.nan) for p in (first, second)
    )
    if not all(map(math.isfinite, (low_a, high_a, low_b, high_b))):
        return f"{a:.4g} then {b:.4g} (no interval)", None
    if low_b > high_a:
        return f"[{low_a:.4g}, {high_a:.4g}] < [{low_b:.4g}, {high_b:.4g}]", True
    if high_b < low_a:
        return f"[{low_a:.4g}, {high_a:.4g}] > [{low_b:.4g}, {high_b:.4g}] (reversed)", False
    return f"[{low_a:.4g}, {high_a:.4g}] overlaps [{low_b:.4g}, {high_b:.4g}]", None


def _combined_interval(first: Values, second: Values, sign: str) -> list[tuple[float, float]] | None:
    """The interval of a difference or ratio of two points: over their processes where both name them
    (process_stats: Welch across the two groups of processes, paired by round where enough rounds
    measured both); else the widest the two points' intervals allow, conservative (it ignores that the
    two sides' errors partly cancel), so what it resolves is resolved."""
    if first.processes and second.processes:
        combine = process_stats.difference_interval if sign == "-" else process_stats.ratio_interval
        between = combine(first.processes[0], second.processes[0])
        return [(between.low, between.high)]
    if not first.intervals or not second.intervals:
        return None
    (a_low, a_high), (b_low, b_high) = first.intervals[0], second.intervals[0]
    if sign == "-":
        return [(a_low - b_high, a_high - b_low)]
    if min(a_low, b_low) <= 0:
        return None
    return [(a_low / b_high, a_high / b_low)]


def _judge_values(
    claim: Claim, values: Values, accepted: tuple[float, float], factor: float | None, how: str
) -> tuple[str, str]:
    """The result for a claim's values against its accepted range (and its direction, if it has one)."""
    untestable = untestable_reason(claim.expected, accepted, factor)
    magnitude = _inside(values, accepted)
    if claim.direction is None:
        if untestable:
            return NOT_TESTABLE, f"{untestable}; {how}"
        if magnitude is None:
            return (
                NOT_RESOLVED,
                f"the interval straddles an end of the accepted range; {_intervals(values)}{how}",
            )
        return (WITHIN if magnitude else OUTSIDE), f"{_intervals(values)}{how}"
    direction = claim.direction
    holds = _direction(values, direction)
    text = f"direction {direction.describe()}"
    if holds is None:
        return NOT_RESOLVED, f"{text} not resolved: {_unresolved_why(values, direction)}; {how}"
    if not holds:
        return DIRECTION_FAILS, f"{text} does not hold; {_intervals(values)}{how}"
    text = f"{text} holds; {_intervals(values)}{how}"
    if untestable:
        return DIRECTION_UNTESTED, f"magnitude not testable here: {untestable}; {text}"
    if magnitude is None:
        return DIRECTION_UNRESOLVED, f"magnitude not resolved: the interval straddles an end; {text}"
    return (DIRECTION_WITHIN if magnitude else DIRECTION_OUTSIDE), text


def _inside(values: Values, accepted: tuple[float, float]) -> bool | None:
    """Whether every value is inside the range; with intervals, None when one straddles an end."""
    low, high = accepted
    if values.intervals is None or not all(_known(i) for i in values.intervals):
        return all(low <= v <= high for v in values.values)
    if any(i_high < low or i_low > high for i_low, i_high in values.intervals):
        return False
    if all(low <= i_low and i_high <= high for i_low, i_high in values.intervals):
        return True
    return None


def _direction(values: Values, direction: Direction) -> bool | None:
    """True or False where resolved, None where not: the interval includes the threshold, or (without
    one) a value lies within NEAR_THRESHOLD of it."""
    threshold = direction.threshold
    if values.intervals is not None and all(_known(i) for i in values.intervals):
        if all(direction.holds(low) and direction.holds(high) for low, high in values.intervals):
            return True
        if any(not direction.holds(low) and not direction.holds(high) for low, high in values.intervals):
            return False
        return None
    if any(abs(v - threshold) <= NEAR_THRESHOLD * max(abs(threshold), 1e-12) for v in values.values):
        return None
    if threshold == 0:
        return None  # a difference from nothing, without an interval, is noise until shown otherwise
    return all(direction.holds(v) for v in values.values)


def _unresolved_why(values: Values, direction: Direction) -> str:
    if values.intervals is not None and all(_known(i) for i in values.intervals):
        spans = ", ".join(f"[{low:.4g}, {high:.4g}]" for low, high in values.intervals)
        return f"the 95% interval {spans} includes {direction.threshold:g}"
    return "no interval over repeats, and the value is too near the threshold to read without one"


def _intervals(values: Values) -> str:
    if values.intervals is None or not all(_known(i) for i in values.intervals):
        return ""
    spans = ", ".join(f"[{low:.4g}, {high:.4g}]" for low, high in values.intervals)
    return f"95% interval {spans}; "


def _known(interval: tuple[float, float]) -> bool:
    return all(math.isfinite(end) for end in interval)


def _bound(value: float) -> str:
    return "any" if math.isinf(value) else f"{value:.4g}"
