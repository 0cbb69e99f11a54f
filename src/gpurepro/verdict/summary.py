"""The verdict per paper: reproduced, partially reproduced, not reproduced, too few claims testable here,
or not measured, always with its coverage (k of n claims testable here) and, for the claims not
measured, why, and its inconclusive claims. Only held, partly held and not held readings are testable; a
claim inconclusive at the processes it had, not testable here, informational or not measured says
nothing either way, so a paper with fewer than half its claims testable is not given a verdict. The
project's own regression checks are never counted here. A paper's claims are counted as distinct
measurements (measurements.py): a claim that reads another's measurement is shown with it, and the
headline says how many such readings it left uncounted."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .claims import REGRESSION, REPRODUCTION
from .measurements import counted_once
from .outcome import Outcome
from .statuses import ABOVE_RESULTS, GRADES, HELD, PARTLY, TESTABLE, UNMEASURED, UNRESOLVED

REPRODUCED = "reproduced"
PARTIALLY = "partially reproduced"
NOT_REPRODUCED = "not reproduced"
TOO_FEW = "too few claims testable here"
NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class PaperVerdict:
    paper: str
    verdict: str
    counts: Counter
    # why claims were not measured, each reason once with the ids of the claims it kept out
    unmeasured: tuple[tuple[str, tuple[str, ...]], ...]
    # claims whose figure lies above a range the paper states (news the headline must carry)
    above_range: int = 0
    # claims that read a measurement another claim's reading counts (shown with it, not counted again)
    shared: int = 0

    @property
    def testable(self) -> int:
        return sum(self.counts[grade] for grade in TESTABLE)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def headline(self) -> str:
        """The verdict with its coverage and its inconclusive claims, e.g. 'partially reproduced (3 of 8
        claims testable here, 1 inconclusive)': an inconclusive claim neither holds nor lowers it. Where
        claims share measurements it counts the measurements: '(2 of 5 distinct measurements testable
        here, of 8 claims)'."""
        inconclusive = self.counts[UNRESOLVED]
        more = f", {inconclusive} inconclusive" if inconclusive else ""
        more += f", {self.above_range} above the paper's range" if self.above_range else ""
        if not self.shared:
            return f"{self.verdict} ({self.testable} of {self.total} claims testable here{more})"
        counted = f"{self.testable} of {self.total} distinct measurements testable here"
        return f"{self.verdict} ({counted}, of {self.total + self.shared} claims{more})"

    def describe_counts(self) -> str:
        return ", ".join(f"{self.counts[grade]} {grade}" for grade in GRADES if self.counts[grade])

    def describe_unmeasured(self) -> str:
        return "; ".join(f"{why} ({', '.join(ids)})" for why, ids in self.unmeasured)


def verdict_of(counts: Counter) -> str:
    """Not measured: nothing measured. Too few testable: under half the claims testable here.
    Reproduced: every testable claim held. Not reproduced: none even partly held. Anything else partial."""
    testable = sum(counts[grade] for grade in TESTABLE)
    if sum(counts.values()) == counts[UNMEASURED]:
        return NOT_MEASURED
    if 2 * testable < sum(counts.values()) or testable == 0:
        return TOO_FEW
    if counts[HELD] == testable:
        return REPRODUCED
    if counts[HELD] + counts[PARTLY] == 0:
        return NOT_REPRODUCED
    return PARTIALLY


def paper_verdicts(outcomes: list[Outcome]) -> list[PaperVerdict]:
    """One verdict per paper of the reproduction claims, papers in the order their claims come, each
    measurement counted once."""
    papers: dict[str, list[Outcome]] = {}
    for outcome in counted_once(outcomes):
        if outcome.claim.purpose == REPRODUCTION:
            papers.setdefault(outcome.claim.paper, []).append(outcome)
    return [_paper(paper, group) for paper, group in papers.items()]


def _paper(paper: str, readings: list[Outcome]) -> PaperVerdict:
    outcomes = [outcome for outcome in readings if outcome.counted_with is None]
    counts = Counter(outcome.grade for outcome in outcomes)
    reasons: dict[str, list[str]] = {}
    for outcome in readings:
        if outcome.grade == UNMEASURED:
            reasons.setdefault(outcome.detail, []).append(outcome.claim.id)
    above = sum(outcome.result in ABOVE_RESULTS for outcome in outcomes)
    unmeasured = tuple((w, tuple(ids)) for w, ids in reasons.items())
    shared = len(readings) - len(outcomes)
    return PaperVerdict(paper, verdict_of(counts), counts, unmeasured, above, shared)


def regression_counts(outcomes: list[Outcome]) -> str:
    """The regression checks in one line, e.g. '5 within tolerance, 1 not measured'."""
    counts = Counter(o.status for o in outcomes if o.claim.purpose == REGRESSION)
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "none"
