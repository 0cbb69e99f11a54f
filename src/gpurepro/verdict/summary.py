"""The verdict per paper: reproduced, partially reproduced, not reproduced or not measured, with counts
and, for the claims not measured, why. The project's own regression checks are never counted here."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .claims import REGRESSION, REPRODUCTION
from .evaluate import HELD, NOT_HELD, PARTLY, UNMEASURED, Outcome

REPRODUCED = "reproduced"
PARTIALLY = "partially reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_MEASURED = "not measured"
GRADES = (HELD, PARTLY, NOT_HELD, UNMEASURED)


@dataclass(frozen=True)
class PaperVerdict:
    paper: str
    verdict: str
    counts: Counter
    # why claims were not measured, each reason once with the ids of the claims it kept out
    unmeasured: tuple[tuple[str, tuple[str, ...]], ...]

    def describe_counts(self) -> str:
        return ", ".join(f"{self.counts[grade]} {grade}" for grade in GRADES if self.counts[grade])

    def describe_unmeasured(self) -> str:
        return "; ".join(f"{why} ({', '.join(ids)})" for why, ids in self.unmeasured)


def verdict_of(counts: Counter) -> str:
    """Reproduced: every claim measured and held. Not reproduced: claims measured, none even partly held.
    Not measured: nothing measured. Anything else is partial."""
    measured = counts[HELD] + counts[PARTLY] + counts[NOT_HELD]
    if measured == 0:
        return NOT_MEASURED
    if counts[HELD] == sum(counts.values()):
        return REPRODUCED
    if counts[HELD] + counts[PARTLY] == 0:
        return NOT_REPRODUCED
    return PARTIALLY


def paper_verdicts(outcomes: list[Outcome]) -> list[PaperVerdict]:
    """One verdict per paper of the reproduction claims, papers in the order their claims come."""
    papers: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        if outcome.claim.purpose == REPRODUCTION:
            papers.setdefault(outcome.claim.paper, []).append(outcome)
    return [_paper(paper, group) for paper, group in papers.items()]


def _paper(paper: str, outcomes: list[Outcome]) -> PaperVerdict:
    counts = Counter(outcome.grade for outcome in outcomes)
    reasons: dict[str, list[str]] = {}
    for outcome in outcomes:
        if outcome.grade == UNMEASURED:
            reasons.setdefault(outcome.detail, []).append(outcome.claim.id)
    return PaperVerdict(
        paper, verdict_of(counts), counts, tuple((w, tuple(ids)) for w, ids in reasons.items())
    )


def regression_counts(outcomes: list[Outcome]) -> str:
    """The regression checks in one line, e.g. '5 within tolerance, 1 not measured'."""
    counts = Counter(o.status for o in outcomes if o.claim.purpose == REGRESSION)
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "none"
