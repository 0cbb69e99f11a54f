"""Intervals over repetitions, so a difference is read only where it is larger than the noise.

Every interval here is a seeded percentile bootstrap (scipy.stats.bootstrap): the statistic is
recomputed over resamples drawn with replacement from each sample independently, and the interval is
the middle `confidence` of those values. Percentile rather than BCa: BCa needs a jackknife that fails on
samples with repeated values (timings rounded to a clock tick), and these samples are used to ask one
question, "does the interval exclude no difference?", for which the percentile interval is adequate.
The spread between several groups (max - min of their medians) is the exception: its percentile interval
cannot reach 0, so it gets a simultaneous interval from the same resamples (spread_pct_interval).
A permutation test (scipy.stats.permutation_test) gives the p-value of "no difference" beside it.

The verdict (verdict/evaluate.py), the variability and inference tables and the comparison of two runs
use these, so a difference is resolved by the same rule wherever it is read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 4999
SEED = 0

Statistic = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Interval:
    """A statistic's value and its bootstrap interval; low and high are NaN where no interval can be had
    (fewer than two values in a sample: one value says nothing of its own noise)."""

    value: float
    low: float
    high: float
    confidence: float = CONFIDENCE
    method: str = "percentile bootstrap"

    @property
    def known(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def excludes(self, point: float) -> bool:
        """Whether the whole interval lies on one side of `point` (so the difference from it is resolved)."""
        return self.known and (self.low > point or self.high < point)

    def describe(self, unit: str = "", digits: int = 4) -> str:
        unit = f" {unit}" if unit else ""
        if not self.known:
            return f"{self.value:.{digits}g}{unit} (no interval: {self.method})"
        return (
            f"{self.value:.{digits}g}{unit} [{self.low:.{digits}g}, {self.high:.{digits}g}] "
            f"({self.confidence:.0%} {self.method})"
        )


def _median(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(samples[0], axis=axis)


def finite_values(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """The finite values of a sample, as floats (NaN and infinities dropped)."""
    array = np.asarray(values, dtype=float)
    return array[np.isfinite(array)]


def _unresolvable(arrays: Sequence[np.ndarray]) -> str | None:
    """Why these samples give no interval (an empty sample, or one value: it says nothing of its own
    noise), or None where they do."""
    if any(len(array) == 0 for array in arrays):
        return "an empty sample"
    if any(len(array) < 2 for array in arrays):
        return "one value in a sample"
    return None


def _constant(arrays: Sequence[np.ndarray]) -> bool:
    """Every sample holds one value repeated: every resample is the sample itself."""
    return all(np.ptp(array) == 0 for array in arrays)


def _resample(
    arrays: Sequence[np.ndarray], statistic: Statistic, confidence: float, resamples: int, seed: int
) -> Any:
    """scipy's seeded percentile bootstrap (its BootstrapResult, which scipy does not export), each
    sample resampled on its own; the statistic may return several values (one per group), each with its
    own interval from the same resamples."""
    return stats.bootstrap(
        arrays,
        statistic,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(seed),
    )


def bootstrap(
    samples: Sequence[Sequence[float] | np.ndarray],
    statistic: Statistic,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """`statistic(*samples, axis=-1)` (vectorised over resamples) with its percentile bootstrap interval,
    each sample resampled on its own. NaN values are dropped first."""
    arrays = [finite_values(sample) for sample in samples]
    reason = _unresolvable(arrays)
    if reason == "an empty sample":
        return Interval(math.nan, math.nan, math.nan, confidence, reason)
    value = float(statistic(*arrays, axis=-1))
    if reason:
        return Interval(value, math.nan, math.nan, confidence, reason)
    if _constant(arrays):
        return Interval(value, value, value, confidence, "percentile bootstrap (constant samples)")
    low, high = _resample(arrays, statistic, confidence, resamples, seed).confidence_interval
    return Interval(value, float(low), float(high), confidence)


def median_interval(values: Sequence[float] | np.ndarray, **options: float) -> Interval:
    """The median of one sample with its interval."""
    return bootstrap([values], _median, **options)  # type: ignore[arg-type]


def mean_interval(values: Sequence[float] | np.ndarray, **options: float) -> Interval:
    """The mean of one sample with its interval."""

    def mean(sample: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(sample, axis=axis)

    return bootstrap([values], mean, **options)  # type: ignore[arg-type]


def coefficient_of_variation(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    """Standard deviation (ddof 0) over mean, along `axis`."""
    return np.std(sample, axis=axis) / np.mean(sample, axis=axis)


def ratio_interval(
    numerator: Sequence[float] | np.ndarray,
    denominator: Sequence[float] | np.ndarray,
    of: Statistic = np.median,
    **options: float,
) -> Interval:
    """of(numerator) / of(denominator) (the median by default), two independent samples (e.g. the reps
    of two GPUs), each resampled on its own."""

    def ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return of(a, axis=axis) / of(b, axis=axis)

    return bootstrap([numerator, denominator], ratio, **options)  # type: ignore[arg-type]


def difference_interval(
    minuend: Sequence[float] | np.ndarray, subtrahend: Sequence[float] | np.ndarray, **options: float
) -> Interval:
    """mean(minuend) - mean(subtrahend), two independent samples (e.g. power in two windows)."""

    def difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(a, axis=axis) - np.mean(b, axis=axis)

    return bootstrap([minuend, subtrahend], difference, **options)  # type: ignore[arg-type]


def _medians(samples: Sequence[np.ndarray], axis: int = -1) -> np.ndarray:
    """Each sample's median, groups along the last axis (resamples, if any, along the first)."""
    return np.stack([np.median(sample, axis=axis) for sample in samples], axis=-1)


def spread_pct_interval(groups: Sequence[Sequence[float] | np.ndarray], **options: float) -> Interval:
    """(max - min) / min of the groups' medians, in percent (the variability study's spread between
    GPUs), each group (a GPU's reps over its runs) resampled on its own.

    Not the percentile interval of the resampled spread: a spread is never below 0, and the resampled
    medians' own noise widens it, so that interval excludes 0 even for groups drawn from one
    distribution. Nor the interval of the observed extremes' difference: picked as the extremes, they lie
    apart by chance (8 GPUs alike gave it 40% of the time). Instead a simultaneous interval: every
    group's log median lies within its deviation of the truth, so the true log spread lies within the
    range of those deviations (max - min over groups) of the observed one. The bootstrap gives that range
    over resamples; its `confidence` quantile q bounds the log spread to [observed - q, observed + q]
    for every pair of groups at once (8 GPUs alike: 1.5% of intervals exclude 0; 2: 4%). The low end is
    cut at 0, a spread's floor: low == 0 reads "not resolved from no spread"."""
    confidence = float(options.get("confidence", CONFIDENCE))
    arrays = [finite_values(group) for group in groups]
    reason = _unresolvable(arrays)
    if reason == "an empty sample" or not arrays:
        return Interval(math.nan, math.nan, math.nan, confidence, reason or "no groups")
    medians = _medians(arrays)
    value = float((medians.max() - medians.min()) / medians.min() * 100)
    if reason or len(arrays) < 2 or medians.min() <= 0:
        return Interval(value, math.nan, math.nan, confidence, reason or "fewer than two positive groups")
    method = "simultaneous bootstrap (range of the groups' deviations)"
    if _constant(arrays):
        return Interval(value, value, value, confidence, f"{method}, constant samples")
    logs = np.log(medians)

    def deviation_range(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        deviations = np.log(_medians(samples, axis=axis)) - logs
        return deviations.max(axis=-1) - deviations.min(axis=-1)

    resampled = _resample(
        arrays,
        deviation_range,
        confidence,
        int(options.get("resamples", RESAMPLES)),
        int(options.get("seed", SEED)),
    )
    margin = float(np.quantile(resampled.bootstrap_distribution, confidence))
    spread = float(logs.max() - logs.min())
    low, high = max(0.0, math.expm1(spread - margin) * 100), math.expm1(spread + margin) * 100
    return Interval(value, low, high, confidence, method)


def relative_to_median_intervals(
    groups: Sequence[Sequence[float] | np.ndarray], **options: float
) -> list[Interval]:
    """Each group's median over the median of the groups' medians (a GPU's rate against the median GPU's),
    all from the same resamples: with an even count the median GPU is no one group but the middle two's
    mean, so the reference is resampled with the groups it is made of."""
    confidence = float(options.get("confidence", CONFIDENCE))
    arrays = [finite_values(group) for group in groups]
    reason = _unresolvable(arrays)
    if reason == "an empty sample" or not arrays:
        return [Interval(math.nan, math.nan, math.nan, confidence, reason or "no groups")] * len(arrays)

    def relative(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        medians = _medians(samples, axis=axis)
        return np.moveaxis(medians / np.median(medians, axis=-1, keepdims=True), -1, 0)

    values = relative(*arrays)
    if reason:
        return [Interval(float(value), math.nan, math.nan, confidence, reason) for value in values]
    if _constant(arrays):
        method = "percentile bootstrap (constant samples)"
        return [Interval(float(value), float(value), float(value), confidence, method) for value in values]
    resampled = _resample(
        arrays, relative, confidence, int(options.get("resamples", RESAMPLES)), int(options.get("seed", SEED))
    )
    low, high = resampled.confidence_interval
    return [
        Interval(float(v), float(lo), float(hi), confidence)
        for v, lo, hi in zip(values, low, high, strict=True)
    ]


def spread_p_value(
    groups: Sequence[Sequence[float] | np.ndarray], resamples: int = RESAMPLES, seed: int = SEED
) -> float:
    """P-value of "all groups come from one distribution" against the spread of their medians (max - min),
    the values shuffled among all groups. Not the test of the two extreme groups alone: picked as the
    extremes after the fact, 8 GPUs alike gave p < 0.05 42% of the time; this gave it 4%. For two groups
    it is the two-sided test of their medians' difference."""
    arrays = [finite_values(group) for group in groups]
    if len(arrays) < 2 or _unresolvable(arrays):
        return math.nan

    def spread(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        medians = _medians(samples, axis=axis)
        return medians.max(axis=-1) - medians.min(axis=-1)

    result = stats.permutation_test(
        arrays,
        spread,
        vectorized=True,
        n_resamples=resamples,
        alternative="greater",
        permutation_type="independent",
        random_state=np.random.default_rng(seed),
    )
    return float(result.pvalue)


def permutation_p_value(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> float:
    """Two-sided p-value of "a and b come from one distribution", on the difference of their medians."""
    first, second = finite_values(a), finite_values(b)
    if len(first) < 2 or len(second) < 2:
        return math.nan

    def difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(x, axis=axis) - np.median(y, axis=axis)

    result = stats.permutation_test(
        (first, second),
        difference,
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        random_state=np.random.default_rng(seed),
    )
    return float(result.pvalue)
