"""Check claims against a run's tables, on whatever GPU the run measured, so that every reading survives
the paper's authors reading it.

How a claim is judged depends on its kind and on the GPU:
- relative (a ratio within one run): on every GPU, its direction (e.g. a speedup above 1) apart from its
  magnitude. A direction is read only where it is resolved: the value's interval over reps and runs
  (the claim's measure.interval) excludes the threshold; without an interval, a value within
  judging.NEAR_THRESHOLD of the threshold is not read at all.
- an ordering (DeiT-T < DeiT-S < DeiT-B): each step read only where it is resolved: where both points
  name their processes (an across-process table), the interval of their difference over those processes
  (process_stats.difference_interval) excludes 0; else the two points' intervals part.
- a difference or ratio of two points (subtract, divide_by): its interval over the two points'
  processes where both name them, else the widest the two points' intervals allow.
- absolute, on the paper's GPU: "within tolerance" or "outside tolerance", as published.
- absolute, on another GPU: scaled through reference rates like for like (scaling.py: measured against
  measured, else datasheet against datasheet), those of the GPUs its points ran on where the run
  measured rates per GPU (sides.claim_references); or, where nothing makes it comparable
  (claim.off_paper_gpu), informational or "not comparable" with why (a host-bound latency says how much
  of it is host time).
- "GPUs differ" (direction.test): read from the test's p-value among the measure's rows, never from an
  interval of a max - min spread, which lies above 0 for identical GPUs too.
- every magnitude: its interval is at least the spread of the highest level of variation it spans
  (between.py, levels.py): a claim read against a paper spans machines, so its interval covers the
  spread between machines of one GPU model measured for its study, pace and kind of figure, and for a
  side from few processes the between-process spread shrunk over them.
- a reading resting on a host-paced side (hostpaced.py: the GPU busy under half the time): its direction
  judged, its magnitude host-dependent and not counted unless its interval over machines resolves it,
  shown with the GPU's utilisation during the point and, for a speedup over a host-paced baseline, the
  same speedup over the baseline's graphed step.
Any range that cannot fail (ranges.py) is "not testable here", never held; so is a bound over a
population on fewer GPUs than it needs (needs.population) and a place in a sweep the run did not sweep
widely enough (needs.sweep), unless the quick plan's sizes left it so: then it is "not measured (quick
plan)", since the plan, not the GPU, left it untested. Any claim is "not measured" when its value cannot
be read here, and the detail says why (reading.py). Every outcome carries the processes behind each side
of its value, so an inconclusive one says at how many it stands.

Here the claim is taken through those cases; how values read against a range, a direction or an order is
judging.py's, the words of the results statuses.py's, and the outcome's wording outcome.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import pandas as pd

from ..hardware import Gpu, matching
from ..looks import Look, of_claim, widen
from ..stats import CONFIDENCE
from . import hostpaced, levels
from .between import level_interval
from .claims import INFORMATIONAL, RELATIVE, Claim, Selection
from .claims import NOT_COMPARABLE as NOT_COMPARABLE_READING
from .here import Here
from .judging import combined_interval, judge_values, order_step
from .measured import QUICK_PLAN
from .outcome import Outcome
from .ranges import accepted_range, number
from .reading import NotMeasured, Values, read, swept
from .scaling import NoReference, datasheet_bridge, scale_factor
from .sides import claim_references
from .statuses import (
    EXACT,
    NOT_COMPARABLE,
    NOT_MEASURED,
    NOT_MEASURED_QUICK,
    NOT_RESOLVED,
    NOT_TESTABLE,
    OFF_PAPER,
    ORDER_FAILS,
    ORDER_HOLDS,
    SCALED,
    SHOWN,
    TRANSFERRED,
)


def evaluate(
    claims: list[Claim],
    tables: dict[str, pd.DataFrame],
    hardware: dict[str, Gpu],
    gpu_count: int | None = None,
    plots: dict[str, str] | None = None,
    rules: dict[str, str] | None = None,
    plan: str = "",
    looks: Mapping[str, Look] | None = None,
) -> list[Outcome]:
    """The outcome of each claim, in the order given, for a run whose tables (by name: tables/<name>.csv)
    and plots (by name: plots/<name>.png -> the path to link) are given. `gpu_count`: GPUs the run had
    (default: those its tables name); `rules`: the rule that writes each table, for not-measured hints;
    `plan`: the run's plan as its provenance records it (measured.HowMeasured.plan; '' unknown);
    `looks`: the look each family of points is judged at (looks.py: intervals at its confidence), none:
    every claim judged once, at 95%."""
    here = Here.of(tables, gpu_count)
    by_id = {claim.id: claim for claim in claims}
    judge = _Judge(
        here, tables, rules or {}, matching(hardware, here.gpu_names), by_id, plan, dict(looks or {})
    )
    return [judge.outcome(claim, hardware, plots or {}) for claim in claims]


@dataclass
class _Judge:
    here: Here
    tables: dict[str, pd.DataFrame]
    rules: dict[str, str]
    here_gpu: Gpu | None  # this GPU's hardware entry (its datasheet), matched by NVML name
    claims: dict[str, Claim]  # every claim judged, by id: a claim read through another finds it
    plan: str = ""  # the run's plan: QUICK_PLAN where every raw file was measured by the quick plan
    looks: Mapping[str, Look] = field(default_factory=dict)  # family of points -> the look it is judged at

    def outcome(self, claim: Claim, hardware: dict[str, Gpu], plots: dict[str, str]) -> Outcome:
        paper = tuple(hardware[gpu] for gpu in claim.gpus)
        plot = plots.get(claim.plot) if claim.plot else None

        def result(result: str, detail: str, judged: str = "", **more: object) -> Outcome:
            on = self.here.describe() if judged else ""
            return Outcome(claim, result, detail, judged, paper, on, plot=plot, **more)  # type: ignore[arg-type]

        why_not = self._unmeasurable(claim)
        if why_not:
            return result(NOT_MEASURED, why_not)
        unswept = self._unswept(claim)
        if unswept and self.plan == QUICK_PLAN:  # the plan's sizes left it untested, not the GPU
            return result(NOT_MEASURED_QUICK, f"{unswept}; the full plan sweeps the profile's sizes")
        untestable = self._untestable(claim) or (f"cannot judge: {unswept}" if unswept else "")
        if untestable:
            return result(NOT_TESTABLE, untestable, RELATIVE if claim.kind == RELATIVE else EXACT)
        moving = claim.protocol.moving if claim.protocol is not None else ()
        if moving:
            differences = "; ".join(f"{d.what} ({d.why})" for d in moving)
            return result(
                NOT_COMPARABLE,
                f"the workload here differs from the paper's in a way that moves the figure: {differences}",
                RELATIVE if claim.kind == RELATIVE else EXACT,
            )
        on_paper_gpu = any(gpu.matches(name) for gpu in paper for name in self.here.gpu_names)
        if claim.kind != RELATIVE and not on_paper_gpu and claim.scaling is not None:
            bridged = datasheet_bridge(claim.scaling, paper[0], self.here_gpu)
            if bridged:
                return self._through(claim, bridged, hardware, plots, result)
        off = None if on_paper_gpu else claim.off_paper_gpu
        if off is not None and off.reading == NOT_COMPARABLE_READING:
            # nothing to read: the figure belongs to the paper's GPU
            return result(NOT_COMPARABLE, f"off {paper[0].name}: {off.why}", OFF_PAPER)
        try:
            if claim.order:
                verdict, detail, ordered, counts, unsettled = self._order(claim)
                return result(
                    verdict, detail, RELATIVE, values=ordered, processes=counts, unsettled=unsettled
                )
            values, how = self._values(claim)
            p_value = self._p_value(claim)
        except NotMeasured as why:
            return result(NOT_MEASURED, str(why))
        numbers = tuple(values.values)
        if off is not None:
            text, reading = self._off_paper(claim, paper[0], values, how)
            return result(reading, text, OFF_PAPER, values=numbers, processes=values.counts)
        factor, judged, uncertainty = None, EXACT if claim.kind != RELATIVE else RELATIVE, 0.0
        if claim.kind != RELATIVE and not on_paper_gpu and claim.scaling is not None:
            rates = claim_references(claim, self.tables)  # of the cards its points ran on
            try:
                scaled = scale_factor(claim.scaling, paper[0], rates.rates, self.here_gpu, rates.where)
            except NoReference as why:
                return result(NOT_MEASURED, str(why))
            uncertainty = claim.scaling.uncertainty
            if scaled.rates:
                factor, judged = scaled.value, SCALED
                how = f"{how}; scaled by {factor:.4g} = {scaled.how}"
            else:
                judged = TRANSFERRED
                how = f"{how}; {scaled.how}"
        values, how = self._at_look(claim, values, how)
        sides = hostpaced.claim_sides(claim, self.tables)
        widened = level_interval(claim, values, sides, levels.load())
        values = replace(widened.values, confidence=values.confidence)
        how = "; ".join(part for part in (how, widened.words) if part)
        accepted = accepted_range(claim.expected, claim.tolerance, factor, uncertainty)
        verdict, how = judge_values(claim, values, accepted, factor, how, p_value, uncertainty)
        detail = f"accepted {number(accepted[0])} to {number(accepted[1])}{claim.shown_unit}; {how}"
        baseline = hostpaced.gpu_bound_baseline(claim, sides, self.tables)
        verdict, detail = hostpaced.named(claim, verdict, detail, sides, widened.host_resolvable, baseline)
        return result(
            verdict,
            detail,
            judged,
            values=numbers,
            accepted=accepted,
            intervals=tuple(values.intervals or ()),
            factor=factor,
            processes=values.counts,
        )

    def _through(
        self,
        claim: Claim,
        bridged: str,
        hardware: dict[str, Gpu],
        plots: dict[str, str],
        result: Callable[..., Outcome],
    ) -> Outcome:
        """A claim whose datasheet scaling bridges too far: the reading of the claim of the same table
        its scaling.through names (one reading per table on one GPU), else not comparable."""
        through = self.claims.get(claim.scaling.through) if claim.scaling and claim.scaling.through else None
        if through is None:
            return result(
                NOT_COMPARABLE, f"{bridged}; no figure of the same table on a nearer GPU", OFF_PAPER
            )
        other = self.outcome(through, hardware, plots)
        ratio = f"{claim.describe_expected()} on {claim.gpus[0]} and {through.describe_expected()}"
        detail = (
            f"{bridged}: read through {through.id}, the same table's figure on {other.describe_paper_gpus()} "
            f"(the paper's own ratio between its GPUs: {ratio}): {other.detail}"
        )
        return replace(other, claim=claim, detail=detail, through=through.id)

    def _untestable(self, claim: Claim) -> str:
        """Why the run cannot test the claim though it measured: a population it does not hold (a
        cluster's tail, a cluster's variation)."""
        population = claim.needs_population
        if population is not None and self.here.gpu_count < population.gpus:
            return f"needs {population.gpus} GPUs of one model, {self.here.gpu_count} here ({population.why})"
        return ""

    def _unswept(self, claim: Claim) -> str:
        """Why the run's sweep is too narrow to place the claim's point in it (a plateau needs sizes
        around N), or '' where it is wide enough or the claim needs no sweep."""
        sweep = claim.needs_sweep
        if sweep is not None and claim.measure.table in self.tables:  # else: not measured, saying why
            values = swept(claim.measure, sweep.column, self.tables)
            if len(values) < sweep.at_least:
                shown = ", ".join(f"{v:g}" if isinstance(v, float | int) else str(v) for v in values)
                return (
                    f"a plateau needs at least {sweep.at_least} values of {sweep.column} swept, this run "
                    f"swept {len(values)} ({shown or 'none'})"
                )
        return ""

    def _p_value(self, claim: Claim) -> float | None:
        """The p-value a direction test reads (direction.test), from the measure's own point."""
        test = claim.direction.test if claim.direction is not None else None
        if test is None:
            return None
        selection = Selection(claim.measure.table, claim.measure.metric, test.statistic, claim.measure.where)
        return read(selection, claim.study, self.tables, self.rules).values[0]

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
        counts = numerator.counts + second.counts
        parts = (a, b) if sign == "-" else ()
        interval = combined_interval(numerator, second, sign)
        return Values([value], claim.unit, interval, counts=counts, parts=parts), how

    def _order(
        self, claim: Claim
    ) -> tuple[str, str, tuple[float, ...], tuple[int | None, ...], tuple[int, ...]]:
        """The result, its detail, the points' values, the processes behind each, and the positions of
        the points in its unresolved steps: each point's value must exceed the one before; a step counts
        only where it is resolved (judging.order_step)."""
        read_points = [
            read(claim.measure.with_where(where), claim.study, self.tables, self.rules)
            for where in claim.order
        ]
        points = [self._at_look(claim, point)[0] for point in read_points]
        values = [p.values[0] for p in points]
        look = self._look(claim)
        confidence = look.confidence if look else CONFIDENCE
        steps, unsettled, reversed_ = [], set(), 0
        for i, (first, second) in enumerate(zip(points, points[1:], strict=False)):
            step, resolved = order_step(first, second, confidence)
            steps.append(step)
            if resolved is None:
                unsettled |= {i, i + 1}
            reversed_ += resolved is False
        verdict = ORDER_FAILS if reversed_ else NOT_RESOLVED if unsettled else ORDER_HOLDS
        level = f"{confidence * 100:.4g}% intervals" + (f"; {look.describe()}" if look else "")
        detail = f"{'; '.join(steps)} {claim.unit} ({level}) from {claim.measure.describe()}"
        return verdict, detail, tuple(values), tuple(p.counts[0] for p in points), tuple(sorted(unsettled))

    def _look(self, claim: Claim) -> Look | None:
        return of_claim(self.looks, claim.measure.table)

    def _at_look(self, claim: Claim, values: Values, how: str = "") -> tuple[Values, str]:
        """The run's own intervals rebuilt at the confidence of the look the claim is judged at (none:
        judged once, at 95%), and `how` saying which. The spread between machines that level_interval
        widens them to is a floor more processes never narrow, so looking again does not test it again:
        it stays at 95%."""
        look = self._look(claim)
        if look is None:
            return values, how
        intervals = values.intervals and widen(values.intervals, look, values.counts, bool(values.parts))
        at_look = replace(values, intervals=intervals or values.intervals, confidence=look.confidence)
        return at_look, "; ".join(part for part in (how, look.describe()) if part)

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
