"""Each measurement counted once. Two claims of one paper read the same measurement when they select the
same figure: the same table, metric and statistic at the same point (its filters), reduced alike, over
the same other side (a ratio's divide_by, a difference's subtract) or the same ordering's points. NVIDIA
states ResNet-50's images/s on one V100 and on one A100: a run measures the one figure once, and a claim
read through another's figure (scaling.through) is that figure again. Only one reading of a measurement
counts toward its paper's headline; the others are shown with it.

Which reading counts: one that is counted at all, then the one judged exactly on its paper's GPU, else
one read directly (not through
another claim), else the first in the claim files' order, so that on a V100 the V100's own figure counts
and on an H200 the A100's, which the V100's is read through."""

from __future__ import annotations

from dataclasses import replace

from .claims import Claim, Selection
from .outcome import Outcome
from .statuses import EXACT, UNMEASURED


def _selection_key(selection: Selection | None) -> tuple[object, ...] | None:
    if selection is None:
        return None
    where = tuple(sorted((str(key), str(value)) for key, value in selection.where.items()))
    return (selection.table, selection.metric, selection.statistic, where, selection.reduce)


def measurement_key(claim: Claim) -> tuple[object, ...]:
    """What makes two claims' readings one measurement (module docstring); claims of different papers or
    purposes are counted apart, each in its own headline."""
    order = tuple(tuple(sorted((str(k), str(v)) for k, v in point.items())) for point in claim.order)
    return (
        claim.purpose,
        claim.paper,
        _selection_key(claim.measure),
        _selection_key(claim.divide_by),
        _selection_key(claim.subtract),
        order,
    )


def _rank(outcome: Outcome) -> tuple[int, int, int, int]:
    """Lower counts first: measured, counted at all (a claim shown but never counted, e.g. one whose
    figure was not found in its source, leaves the measurement to one that counts), judged on the
    paper's GPU, read directly."""
    return (
        outcome.grade == UNMEASURED,
        outcome.claim.not_counted is not None,
        outcome.judged != EXACT,
        outcome.through is not None,
    )


def counted_once(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes in their order, each that shares its measurement with a reading that counts marked
    with that reading's claim (Outcome.counted_with), so that headlines count it once. Idempotent."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for index, outcome in enumerate(outcomes):
        groups.setdefault(measurement_key(outcome.claim), []).append(index)
    marked = [replace(outcome, counted_with=None) for outcome in outcomes]
    for members in groups.values():
        if len(members) < 2:
            continue
        first = min(members, key=lambda i: (_rank(outcomes[i]), i))
        for index in members:
            if index != first:
                marked[index] = replace(marked[index], counted_with=outcomes[first].claim)
    return marked


def counted(outcomes: list[Outcome]) -> list[Outcome]:
    """The readings a headline counts: one per measurement."""
    return [outcome for outcome in counted_once(outcomes) if outcome.counted_with is None]
