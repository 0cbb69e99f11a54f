"""One judged claim (`Outcome`) and how it reads in the report: its status, the GPUs the judgement rests
on, what was expected and what was measured. The judge (evaluate.py) fills it; render.py and summary.py
only read it, so every place that shows a claim words it the same way."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..hardware import Gpu
from .claims import Claim
from .ranges import number, stated_high_end
from .statuses import (
    GRADE_OF,
    INCONCLUSIVE_RESULTS,
    INFO,
    SCALED,
    TRANSFERRED,
    UNMEASURED,
    UNTESTABLE,
)


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    result: str  # one of the results of statuses.py
    detail: str
    judged: str = ""  # EXACT, SCALED, TRANSFERRED, OFF_PAPER or RELATIVE; empty when not measured
    paper_gpus: tuple[Gpu, ...] = ()
    measured_on: str = ""
    values: tuple[float, ...] = ()
    accepted: tuple[float, float] = (-math.inf, math.inf)
    # the interval each value was judged by (widened to the levels of variation it spans); () where none
    intervals: tuple[tuple[float, float], ...] = ()
    factor: float | None = None  # the scaling's factor, for a scaled claim
    plot: str | None = None
    # the processes behind each side of the value (each point of an ordering); None where unknown
    processes: tuple[int | None, ...] = ()
    # an ordering's points (positions in claim.order) in the steps it could not resolve: where more
    # processes can settle it (a resolved step needs none)
    unsettled: tuple[int, ...] = ()
    # the claim of the same table whose reading this one took (scaling.through), if it took one
    through: str | None = None
    # whether its sides shared a GPU round by round and what ran beside them (sides.py); '' unknown
    sides: str = ""
    # the claim whose reading of the same measurement counts toward the headline (measurements.py): this
    # one is shown with it and not counted again; None where this reading counts
    counted_with: Claim | None = None

    @property
    def inconclusive(self) -> bool:
        return self.result in INCONCLUSIVE_RESULTS

    def describe_processes(self) -> str:
        """'3 processes', '3 and 2 processes' (one count a side), 'one process', or '' where unknown."""
        if not self.processes or any(count is None for count in self.processes):
            return ""
        if all(count == 1 for count in self.processes):
            return "one process"
        counts = [str(count) for count in self.processes]
        shown = counts[0] if len(set(counts)) == 1 else " and ".join([", ".join(counts[:-1]), counts[-1]])
        return f"{shown} processes"

    @property
    def status(self) -> str:
        """The verdict in words; a scaled claim says from which GPU, an inconclusive one at how many
        processes it stands."""
        result = self.result
        if self.inconclusive:
            result += f" at {self.describe_processes() or 'an unrecorded number of processes'}"
        measured = GRADE_OF[self.result] != UNMEASURED
        if self.claim.not_counted and measured:
            result += " (shown, not counted)"
        if self.claim.revisions and measured:
            result += f" (protocol revised {self.claim.revisions[-1].date})"
        if self.counted_with is not None:
            result += f" (the measurement of {self.counted_with.id}, counted once there)"
        if self.judged == SCALED:
            return f"scaled from {self.paper_gpus[0].name}: {result}"
        if self.judged == TRANSFERRED:
            return f"from {self.paper_gpus[0].name}, unscaled: {result}"
        return result

    @property
    def grade(self) -> str:
        """How far the result supports the claim (statuses.GRADE_OF); a claim shown but not counted
        (claim.not_counted) is informational whatever it read, unless it was not measured."""
        grade = GRADE_OF[self.result]
        return INFO if self.claim.not_counted and grade != UNMEASURED else grade

    @property
    def uncertainty(self) -> float:
        """The scaling's relative uncertainty that widened the accepted range (0 where not scaled)."""
        scaling = self.claim.scaling
        return scaling.uncertainty if self.factor is not None and scaling is not None else 0.0

    def describe_paper_gpus(self) -> str:
        return ", ".join(gpu.name for gpu in self.paper_gpus)

    def describe_basis(self) -> str:
        """Which GPUs the judgement rests on, e.g. "measured on NVIDIA H200; paper: V100 SXM2"."""
        if not self.measured_on:
            return f"paper: {self.describe_paper_gpus()}"
        return f"measured on {self.measured_on}; paper: {self.describe_paper_gpus()}"

    def describe_expected(self) -> str:
        """The expectation here: the published one, or scaled to this GPU, with the range it accepts,
        both ends (a range the paper states across its models ends at its stated high end, where the
        judge reads "above the paper's range"). A reading taken through another claim's figure expects
        that figure; a range that cannot fail, or a reading not judged against one, prints none."""
        shown = self.counted_with if self.through is not None else None
        if shown is not None and shown.id == self.through:
            text = f"{shown.describe_expected(self.factor)}, {shown.id}'s figure"
        else:
            text = self.claim.describe_expected(self.factor)
        if self.judged and not self.claim.order and GRADE_OF[self.result] not in (UNTESTABLE, INFO):
            low, high = self.shown_range
            text += f"; accepted {number(low)} to {number(high)}{self.claim.shown_unit}"
        return text

    @property
    def shown_range(self) -> tuple[float, float]:
        """The accepted range as the verdict prints and the figures draw it: a range stated across the
        paper's models and GPUs ends at its stated high end (widened as judged), where the judge reads
        "above the paper's range"."""
        low, high = self.accepted
        capped = stated_high_end(self.claim.expected, self.claim.tolerance, self.factor, self.uncertainty)
        return (low, capped) if capped is not None and math.isinf(high) else (low, high)

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
            return f"{number(self.values[0])}{self.claim.shown_unit}"
        if self.claim.order:
            return " < ".join(number(v) for v in self.values) + self.claim.shown_unit
        spread = f"{number(min(self.values))}–{number(max(self.values))}{self.claim.shown_unit}"
        return f"{spread} ({len(self.values)} values)"
