"""How measured values read against a claim: inside or outside its accepted range, its direction held
or not, each step of an ordering, and the interval of a difference or ratio of two points. A reading
counts only where it is resolved: where an interval straddles what it is read against, the answer is
"not resolved", never a guess. Each function returns its result with the words that say why."""

from __future__ import annotations

import math

from .. import process_stats
from ..stats import CONFIDENCE
from .claims import Claim, Direction
from .ranges import stated_high_end, untestable_reason
from .reading import Values
from .statuses import (
    ABOVE_RANGE,
    DIRECTION_ABOVE_RANGE,
    DIRECTION_FAILS,
    DIRECTION_OUTSIDE,
    DIRECTION_UNRESOLVED,
    DIRECTION_UNTESTED,
    DIRECTION_WITHIN,
    NOT_RESOLVED,
    NOT_TESTABLE,
    OUTSIDE,
    WITHIN,
)

# Without an interval, a ratio this close to its threshold (relative) is not read: one run's noise.
NEAR_THRESHOLD = 0.05


def order_step(first: Values, second: Values, confidence: float = CONFIDENCE) -> tuple[str, bool | None]:
    """One step of an ordering, in words, and whether the second point lies above the first (True),
    below it (False) or neither is resolved (None): by the interval of their difference over their
    processes where both name them (at `confidence`: a repeated look's, looks.py), else by whether the
    two points' intervals part."""
    a, b = first.values[0], second.values[0]
    if first.processes and second.processes:
        between = process_stats.difference_interval(second.processes[0], first.processes[0], confidence)
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


def combined_interval(first: Values, second: Values, sign: str) -> list[tuple[float, float]] | None:
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


def judge_values(
    claim: Claim,
    values: Values,
    accepted: tuple[float, float],
    factor: float | None,
    how: str,
    p_value: float | None = None,
    uncertainty: float = 0.0,
) -> tuple[str, str]:
    """The result for a claim's values against its accepted range (and its direction, if it has one;
    from `p_value` where the direction is a test's). A range stated across the paper's models and GPUs
    accepts its lower end and above; a figure above its stated high end reads above the paper's range."""
    untestable = untestable_reason(claim.expected, accepted, factor)
    magnitude = _inside(values, accepted)
    stated_high = stated_high_end(claim.expected, claim.tolerance, factor, uncertainty)
    above = None if stated_high is None else _inside(values, (-math.inf, stated_high))
    above_words = (
        f"above the paper's range: above {stated_high:.4g}, its stated high end widened by the tolerance; "
        if stated_high is not None
        else ""
    )
    end = "an end"
    if magnitude and stated_high is not None and above is None:
        magnitude = None  # inside the accepted range, straddling the stated high end: unresolved
        end = f"the paper's stated high end ({stated_high:.4g} with the tolerance)"
    if claim.direction is None:
        if untestable:
            return NOT_TESTABLE, f"{untestable}; {how}"
        if magnitude is None:
            return (
                NOT_RESOLVED,
                f"the interval straddles an end of the accepted range; {_intervals(values)}{how}",
            )
        if magnitude and above is False:
            return ABOVE_RANGE, f"{above_words}{_intervals(values)}{how}"
        return (WITHIN if magnitude else OUTSIDE), f"{_intervals(values)}{how}"
    direction = claim.direction
    if direction.test is not None:
        holds, text = _tested(direction, p_value)
    else:
        holds = _direction(values, direction)
        text = f"direction {direction.describe()}"
        if holds is None:
            return NOT_RESOLVED, f"{text} not resolved: {_unresolved_why(values, direction)}; {how}"
        text += " holds" if holds else " does not hold"
    if holds is None:
        return NOT_RESOLVED, f"{text}; {how}"
    if not holds:
        return DIRECTION_FAILS, f"{text}; {_intervals(values)}{how}"
    text = f"{text}; {_intervals(values)}{how}"
    if untestable:
        return DIRECTION_UNTESTED, f"magnitude not testable here: {untestable}; {text}"
    if magnitude is None:
        return DIRECTION_UNRESOLVED, f"magnitude inconclusive: the interval straddles {end}; {text}"
    if magnitude and above is False:
        return DIRECTION_ABOVE_RANGE, f"magnitude {above_words}{text}"
    return (DIRECTION_WITHIN if magnitude else DIRECTION_OUTSIDE), text


def _tested(direction: Direction, p_value: float | None) -> tuple[bool | None, str]:
    """A direction read from its test: holds where p < alpha, does not where p >= alpha (the difference
    is within the noise the test sees), unread without a p-value."""
    test = direction.test
    assert test is not None
    if p_value is None or not math.isfinite(p_value):
        return None, f"direction ({test.says}) inconclusive: the test gave no p-value"
    if p_value < test.alpha:
        return True, f"direction holds: {test.says} (p = {p_value:.2g} < {test.alpha:g})"
    return False, f"direction does not hold: not shown that {test.says} (p = {p_value:.2g} ≥ {test.alpha:g})"


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
        return f"the {_level(values)} interval {spans} includes {direction.threshold:g}"
    return "no interval over repeats, and the value is too near the threshold to read without one"


def _intervals(values: Values) -> str:
    if values.intervals is None or not all(_known(i) for i in values.intervals):
        return ""
    spans = ", ".join(f"[{low:.4g}, {high:.4g}]" for low, high in values.intervals)
    return f"{_level(values)} interval {spans}; "


def _level(values: Values) -> str:
    return f"{values.confidence * 100:.4g}%"


def _known(interval: tuple[float, float]) -> bool:
    return all(math.isfinite(end) for end in interval)
