"""Counts compared as counts: how many reps, blocks or units of a point were throttled.

A count is not a time: 9 throttled reps against 8 is one rep more, and the spread of a point's time
between processes says nothing of it ("lower by 11.1%, resolved" from a 1% time spread read a chance
difference of one rep as a change). Each side's counts are summed over its processes, and the two sums
are read as Poisson counts over as many processes each: conditioned on their total, B's count is
binomial, so the exact (Clopper-Pearson) interval of its share gives an exact interval of the rate
ratio B/A per process (the conditional test for two Poisson rates). Equal rates read the same count; a
ratio whose interval excludes 1 is resolved; anything else is too few counts to tell.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as scipy_stats

from ..stats import CONFIDENCE, Interval

# Units of the metrics that count events of a point (throttled reps, telemetry blocks, HFTA's units).
COUNT_UNITS = {"reps", "blocks", "units"}
METHOD = "exact conditional test of two Poisson counts"


def is_count(unit: str) -> bool:
    return unit in COUNT_UNITS


def rate_ratio_interval(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """The rate ratio (B's count per process) / (A's count per process) with its exact interval; the
    high end is infinite where A counted nothing, the interval unknown where neither counted anything."""
    count_a, count_b, total = float(np.sum(a)), float(np.sum(b)), float(np.sum(a) + np.sum(b))
    exposure = len(a) / len(b)  # the ratio of rates is the ratio of counts times this
    value = count_b / count_a * exposure if count_a else math.inf
    if total == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, "no count on either side")
    alpha = 1 - confidence
    low_share = scipy_stats.beta.ppf(alpha / 2, count_b, total - count_b + 1) if count_b else 0.0
    high_share = scipy_stats.beta.ppf(1 - alpha / 2, count_b + 1, total - count_b) if count_a else 1.0
    low = low_share / (1 - low_share) * exposure
    high = high_share / (1 - high_share) * exposure if high_share < 1 else math.inf
    return Interval(value, low, high, confidence, METHOD)


def describe(a: np.ndarray, b: np.ndarray) -> str:
    """'9 -> 8 (-1)', or with processes '9 over 3 processes -> 8 over 4 (-1)'."""
    count_a, count_b = int(np.sum(a)), int(np.sum(b))
    if len(a) == len(b) == 1:
        return f"{count_a} -> {count_b} ({count_b - count_a:+d})"
    return f"{count_a} over {len(a)} processes -> {count_b} over {len(b)} ({count_b - count_a:+d})"
