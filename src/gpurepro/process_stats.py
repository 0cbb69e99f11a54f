"""Intervals across independent processes: what a rerun of a point can be expected to give.

One process is one sample (docs/design.md, "How to measure"): the reps inside a process show that process's
noise, not the next one's, and on one host a figure that the host paces moves 10-60% from one process to
the next. So a figure that a claim or a comparison reads is measured in several processes, and its
interval here is over those processes' figures, one value each.

With a handful of processes (3 to 5) a bootstrap sees only the values it was given: the percentile
interval of the median of three values is their range, which covers the truth far less than 95% of the
time. So these intervals are Student-t intervals of the mean, which widen honestly as the count falls
(t = 4.30 for three processes, 12.7 for two). Rates, times, energies and ratios are positive and spread
multiplicatively between processes (a slow host slows everything by a factor), so where every value is
positive the interval is taken on their logarithms: the interval of the geometric mean, whose spread is
the geometric SD (GSD) this project reports for between-process noise. Where a value can be 0 or
negative (a power above idle, a difference), it is taken on the values themselves.

Paired by round: where two points ran in at least PAIRED_MIN_ROUNDS of the same rounds (round r of every
point of a sweep runs before round r+1 of any, gpurepro/rounds.py), a ratio or difference between them is
taken per round and its interval is over the rounds, so a drift of the host that moved both points in one
round cancels. With fewer common rounds the two points' processes are taken as independent groups
(Welch), which uses every process: pairing n rounds leaves n - 1 degrees of freedom, and it pays for them
only where a round moves both points together. With two rounds (t = 12.7) a fused array at 132k samples/s
in both its processes over a serial model at 8.3k and 13.7k gave [0.88, 190]. With three (t = 4.30,
against Welch's 2.78 at four degrees of freedom) DeiT-B's power above active idle less DeiT-T's on an
H100 read [-5.1, 43.5] W paired and [1.3, 37.1] W as Welch, where every one of DeiT-B's three processes
drew more than every one of DeiT-T's: the host's pace is each process's own (docs/host.md), so a round
shares little between its points. Full runs' five host-paced rounds are paired.

With one process a side no interval can be had from the data; `known_spread_ratio_interval` takes the
between-process spread the project measured for that kind of figure (config/between_process.yaml).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from .stats import CONFIDENCE, Interval, finite_values

T_INTERVAL = "t-interval across processes"
T_INTERVAL_LOG = "t-interval across processes (log scale)"
PAIRED = "paired by round"
ONE_A_SIDE = "one process a side: no interval across processes"
# Fewest rounds two points must share for their ratio or difference to be paired by round (module doc).
PAIRED_MIN_ROUNDS = 5


def _t_bounds(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The Student-t interval of the mean of `values` (at least two)."""
    mean = float(np.mean(values))
    if np.ptp(values) == 0:
        return mean, mean
    half = float(stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * stats.sem(values))
    return mean - half, mean + half


def positive(values: Sequence[float] | np.ndarray) -> bool:
    """Whether every value is above 0 (so the interval is taken on the log scale)."""
    array = finite_values(values)
    return len(array) > 0 and bool((array > 0).all())


def across_processes(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """The median of one figure over its processes, with the t-interval of their (geometric, where all
    are positive) mean; no interval from fewer than two processes."""
    array = finite_values(values)
    if len(array) == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, "no process measured it")
    median = float(np.median(array))
    if len(array) < 2:
        return Interval(median, math.nan, math.nan, confidence, "one process: no interval across processes")
    if positive(array):
        low, high = _t_bounds(np.log(array), confidence)
        return Interval(median, math.exp(low), math.exp(high), confidence, T_INTERVAL_LOG)
    low, high = _t_bounds(array, confidence)
    return Interval(median, low, high, confidence, T_INTERVAL)


def geometric_sd(values: Sequence[float] | np.ndarray) -> float:
    """exp of the standard deviation (ddof 1) of the logs: the factor by which one process's figure
    typically lies from the geometric mean (1.0: no spread). NaN for fewer than two positive values."""
    array = finite_values(values)
    if len(array) < 2 or not positive(array):
        return math.nan
    return math.exp(float(np.std(np.log(array), ddof=1)))


def _paired(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """The two points' values in the rounds both measured (finite values only), in round order."""
    rounds = sorted(r for r in set(a) & set(b) if math.isfinite(a[r]) and math.isfinite(b[r]))
    return np.array([a[r] for r in rounds], dtype=float), np.array([b[r] for r in rounds], dtype=float)


def ratio_interval(
    numerator: Mapping[int, float], denominator: Mapping[int, float], confidence: float = CONFIDENCE
) -> Interval:
    """numerator / denominator of two points' figures by round: paired where at least PAIRED_MIN_ROUNDS
    rounds measured both (the interval of the geometric mean of the per-round ratios), else the ratio of
    the medians with a Welch interval of the two points' log means (each side's processes independent)."""
    top, bottom = _paired(numerator, denominator)
    if len(top) >= PAIRED_MIN_ROUNDS and positive(top) and positive(bottom):
        ratios = top / bottom
        low, high = _t_bounds(np.log(ratios), confidence)
        return Interval(
            float(np.median(ratios)), math.exp(low), math.exp(high), confidence, f"{T_INTERVAL_LOG}, {PAIRED}"
        )
    return unpaired_ratio_interval(list(numerator.values()), list(denominator.values()), confidence)


def unpaired_ratio_interval(
    numerator: Sequence[float] | np.ndarray,
    denominator: Sequence[float] | np.ndarray,
    confidence: float = CONFIDENCE,
) -> Interval:
    """median(numerator) / median(denominator) of two groups of independent processes, with the Welch
    t-interval of the difference of their log means (no interval where a side has fewer than two)."""
    top, bottom = finite_values(numerator), finite_values(denominator)
    if len(top) == 0 or len(bottom) == 0 or not (positive(top) and positive(bottom)):
        return Interval(math.nan, math.nan, math.nan, confidence, "no positive processes on a side")
    value = float(np.median(top) / np.median(bottom))
    if len(top) < 2 or len(bottom) < 2:
        return Interval(value, math.nan, math.nan, confidence, ONE_A_SIDE)
    low, high = _welch_bounds(np.log(top), np.log(bottom), confidence)
    return Interval(value, math.exp(low), math.exp(high), confidence, f"Welch {T_INTERVAL_LOG}")


def difference_interval(
    minuend: Mapping[int, float], subtrahend: Mapping[int, float], confidence: float = CONFIDENCE
) -> Interval:
    """minuend - subtrahend of two points' figures by round: paired where at least PAIRED_MIN_ROUNDS
    rounds measured both, else the difference of the medians with a Welch interval of the difference of
    the means."""
    first, second = _paired(minuend, subtrahend)
    if len(first) >= PAIRED_MIN_ROUNDS:
        differences = first - second
        low, high = _t_bounds(differences, confidence)
        return Interval(float(np.median(differences)), low, high, confidence, f"{T_INTERVAL}, {PAIRED}")
    return unpaired_difference_interval(list(minuend.values()), list(subtrahend.values()), confidence)


def unpaired_difference_interval(
    minuend: Sequence[float] | np.ndarray,
    subtrahend: Sequence[float] | np.ndarray,
    confidence: float = CONFIDENCE,
) -> Interval:
    """median(minuend) - median(subtrahend) of two groups of independent processes, with the Welch
    t-interval of the difference of their means (no interval where a side has fewer than two)."""
    a, b = finite_values(minuend), finite_values(subtrahend)
    if len(a) == 0 or len(b) == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, "no process on a side")
    value = float(np.median(a) - np.median(b))
    if len(a) < 2 or len(b) < 2:
        return Interval(value, math.nan, math.nan, confidence, ONE_A_SIDE)
    low, high = _welch_bounds(a, b, confidence)
    return Interval(value, low, high, confidence, f"Welch {T_INTERVAL}")


def _welch_bounds(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float]:
    """Welch's t-interval of mean(a) - mean(b) (unequal variances; Welch-Satterthwaite degrees of freedom)."""
    difference = float(np.mean(a) - np.mean(b))
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    if va + vb == 0:
        return difference, difference
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, dof) * math.sqrt(va + vb))
    return difference - half, difference + half


def known_spread_ratio_interval(
    numerator: Sequence[float] | np.ndarray,
    denominator: Sequence[float] | np.ndarray,
    log_sd: float,
    confidence: float = CONFIDENCE,
) -> Interval:
    """median(numerator) / median(denominator) where a side has too few processes for its own interval:
    each side's log mean is taken to scatter between processes by `log_sd` (the log of the geometric SD
    the project measured for this kind of figure over many processes), so the log ratio's interval is
    +- z * log_sd * sqrt(1/n_a + 1/n_b)."""
    top, bottom = finite_values(numerator), finite_values(denominator)
    if len(top) == 0 or len(bottom) == 0 or not (positive(top) and positive(bottom)):
        return Interval(math.nan, math.nan, math.nan, confidence, "no positive processes on a side")
    centre = float(np.mean(np.log(top)) - np.mean(np.log(bottom)))
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * log_sd * math.sqrt(1 / len(top) + 1 / len(bottom))
    value = float(np.median(top) / np.median(bottom))
    method = f"measured between-process spread (GSD {math.exp(log_sd):.3g})"
    return Interval(value, math.exp(centre - half), math.exp(centre + half), confidence, method)
