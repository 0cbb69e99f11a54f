"""The range a claim accepts, and whether that range can fail at all.

A claim's figure is widened by its tolerance and, on another GPU, by the scaling's uncertainty. The two
relative widenings combine in quadrature (independent errors: sqrt(t^2 + u^2), not t + u) and apply as a
factor, dividing the low end and multiplying the high one, so a range never crosses zero by widening
alone; an absolute tolerance (in the claim's unit) is added and subtracted first. Ends are clamped at the
physical bound 0 of a quantity claimed non-negative (a time, a power, a spread).

A range that cannot fail says nothing. So a reading is "not testable here" when its accepted range
reaches 0 (the claim's low end, once widened, admits nothing at all), or when it is more than
MAX_WIDENING times as wide as the paper's own figure: high/low of the accepted range over high/low of the
published value or range (for a one-sided bound, the accepted bound against the published one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_WIDENING = 2.0


@dataclass(frozen=True)
class Expected:
    """A value, a range (low and high) or a one-sided bound (low or high alone)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    formula: str | None = None  # the source's numbers the value was computed from, e.g. "87 - 61"
    # a range the paper states across its models and GPUs (why, and its high end): judged at `low` alone
    across: str | None = None
    stated_high: float | None = None


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


def expected_ends(expected: Expected) -> tuple[float, float]:
    """The published figure's low and high ends (both the value for a value; ±inf for an open side)."""
    if expected.value is not None:
        return expected.value, expected.value
    low = -math.inf if expected.low is None else expected.low
    high = math.inf if expected.high is None else expected.high
    return low, high


def combined_relative(tolerance: Tolerance, uncertainty: float) -> float:
    """The tolerance's and the scaling's relative widenings, in quadrature."""
    return math.hypot(tolerance.relative, uncertainty)


def accepted_range(
    expected: Expected, tolerance: Tolerance, factor: float | None = None, uncertainty: float = 0.0
) -> tuple[float, float]:
    """The published ends times `factor` (1 when not scaled), each widened by the absolute tolerance
    (scaled alike) and then by the combined relative widening as a factor; clamped at 0 where the claim
    is non-negative."""
    scale = 1.0 if factor is None else factor
    low, high = (end * scale for end in expected_ends(expected))
    relative = 1.0 + combined_relative(tolerance, uncertainty)
    absolute = tolerance.absolute * scale
    low = low - absolute
    high = high + absolute
    low = low / relative if low > 0 else low * relative
    high = high * relative if high > 0 else high / relative
    if _non_negative(expected):
        low = max(low, 0.0)
    return low, high


def stated_high_end(
    expected: Expected, tolerance: Tolerance, factor: float | None = None, uncertainty: float = 0.0
) -> float | None:
    """The highest figure a range stated across the paper's models and GPUs accepts, widened as the
    accepted range is; None for any other claim. A figure above it reads above the paper's range."""
    if expected.across is None or expected.stated_high is None:
        return None
    stated = Expected(low=expected.low, high=expected.stated_high)
    return accepted_range(stated, tolerance, factor, uncertainty)[1]


def _non_negative(expected: Expected) -> bool:
    low, _ = expected_ends(expected)
    return math.isfinite(low) and low >= 0 or expected.low is None and expected.value is None


def untestable_reason(expected: Expected, accepted: tuple[float, float], factor: float | None = None) -> str:
    """Why this accepted range cannot fail ("" when it can): it reaches 0, or it widens the paper's
    figure more than MAX_WIDENING times."""
    scale = 1.0 if factor is None else factor
    published_low, published_high = (end * scale for end in expected_ends(expected))
    low, high = accepted
    two_sided = math.isfinite(published_low) and math.isfinite(published_high)
    if (two_sided or math.isfinite(published_low)) and low <= 0 < published_low:
        return f"its accepted range reaches 0 ({number(low)} to {number(high)})"
    if two_sided:
        widening = (high / low) / (published_high / published_low) if low > 0 else math.inf
    elif math.isfinite(published_low):
        widening = published_low / low if low > 0 else math.inf
    elif math.isfinite(published_high) and published_high > 0:
        widening = high / published_high
    else:
        return "it states no bound"
    if widening > MAX_WIDENING:
        return (
            f"its accepted range ({number(low)} to {number(high)}) is {widening:.2g}x as wide as the "
            f"paper's figure (more than {MAX_WIDENING:g}x)"
        )
    return ""


def number(value: float) -> str:
    """A figure in the verdict's words: four significant digits, large values in full with thousands
    separators (131,900, not 1.319e+05), "any" for an open end of a range."""
    if math.isinf(value):
        return "any"
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
