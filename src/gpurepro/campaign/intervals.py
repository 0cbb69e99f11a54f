"""Intervals that stay cheap at ten thousand GPUs.

Each GPU's median comes with the distribution-free interval of a median (the order statistics x_(k) and
x_(n-k+1), k from the binomial(n, 1/2) quantile): it assumes only independent reps, covers at least
`confidence`, and needs a sort per GPU instead of a bootstrap per GPU (gpurepro.stats resamples every
group, which a node's four GPUs afford and a cluster's thousands do not). Fewer than six values give no
95% interval, as one value gives none in gpurepro.stats.

A rank correlation between two columns gets a seeded percentile bootstrap over pairs, vectorised over
resamples in batches, so its memory stays bounded however many GPUs there are.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ..stats import CONFIDENCE, SEED, Interval

RESAMPLES = 1999  # for a rank correlation: its interval's ends move by well under 0.01 between seeds
BATCH_ELEMENTS = 4_000_000  # resampled values held at once (32 MB of float64)
UNIT_RESAMPLES = 1999  # resamples of a cluster's GPUs or nodes


def order_statistic_ranks(n: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """The 1-based rank k of the lower end of each median's interval over n values (upper: n - k + 1);
    0 where n values cannot give an interval of this confidence."""
    n = np.asarray(n, dtype=int)
    k = scipy_stats.binom.ppf((1 - confidence) / 2, np.maximum(n, 1), 0.5).astype(int)
    return np.where(n > 0, k, 0)


def group_median_intervals(
    values: np.ndarray, groups: np.ndarray, confidence: float = CONFIDENCE
) -> pd.DataFrame:
    """Median, ci_low, ci_high and count of `values` per integer group code (0..G-1), NaNs dropped; one
    row per code, in code order. Groups with too few values have NaN ends."""
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups)
    finite = np.isfinite(values)
    values, groups = values[finite], groups[finite]
    order = np.lexsort((values, groups))
    ordered, codes = values[order], groups[order]
    size = int(groups.max()) + 1 if len(groups) else 0
    counts = np.bincount(codes, minlength=size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
    k = order_statistic_ranks(counts, confidence)
    usable = (k > 0) & (counts > 0)
    last = max(len(ordered) - 1, 0)

    def at(rank: np.ndarray) -> np.ndarray:
        """The value of each group at this 0-based rank within it (NaN where the group has none)."""
        picked = ordered[np.clip(starts + rank, 0, last)] if len(ordered) else np.full(size, np.nan)
        return np.where(counts > 0, picked, np.nan)

    middle_low, middle_high = at((counts - 1) // 2), at(counts // 2)
    return pd.DataFrame({
        "median": (middle_low + middle_high) / 2,
        "ci_low": np.where(usable, at(k - 1), np.nan),
        "ci_high": np.where(usable, at(counts - k), np.nan),
        "count": counts,
    })  # fmt: skip


def _resampled_ranks(codes: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """The average ranks within each resample (row of `picks`) of values given by their dense rank codes
    (0..m-1, ties sharing one): counted per code, not sorted, so a batch costs O(resamples x pairs)."""
    resamples, m = picks.shape[0], int(codes.max()) + 1
    picked = codes[picks]
    counts = np.bincount((picked + np.arange(resamples)[:, None] * m).ravel(), minlength=resamples * m)
    counts = counts.reshape(resamples, m)
    below = np.cumsum(counts, axis=1) - counts
    return np.take_along_axis(below + (counts + 1) / 2, picked, axis=1)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=-1) / np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))


def spearman_interval(
    x: np.ndarray | pd.Series,
    y: np.ndarray | pd.Series,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """Spearman's rank correlation of paired values with a seeded percentile bootstrap over the pairs
    (pairs with a NaN dropped); no interval from fewer than four pairs or a constant column."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    if n < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Interval(
            math.nan, math.nan, math.nan, confidence, "fewer than two pairs, or a constant column"
        )
    value = float(_pearson_rows(scipy_stats.rankdata(x), scipy_stats.rankdata(y)))
    if n < 4:
        return Interval(value, math.nan, math.nan, confidence, "fewer than four pairs")
    rng = np.random.default_rng(seed)
    batch = max(1, BATCH_ELEMENTS // n)
    x_codes, y_codes = (np.unique(values, return_inverse=True)[1] for values in (x, y))
    estimates = []
    for start in range(0, resamples, batch):
        picks = rng.integers(0, n, size=(min(batch, resamples - start), n))
        estimates.append(_pearson_rows(_resampled_ranks(x_codes, picks), _resampled_ranks(y_codes, picks)))
    resampled = np.concatenate(estimates)
    resampled = resampled[np.isfinite(resampled)]  # a resample of one repeated pair has no ranks
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(resampled, [tail, 100 - tail])
    return Interval(value, float(low), float(high), confidence, "percentile bootstrap over pairs")


def over_units(
    values: np.ndarray, statistic: Callable[[np.ndarray], dict[str, np.ndarray]]
) -> dict[str, tuple[float, float, float]]:
    """Each named statistic of the values of a cluster's units (its GPUs, its nodes), with a seeded
    percentile interval over resampled units: how well this many units pin the figure down. `statistic`
    takes a (resamples, units) array and reduces along its last axis; batched, so memory stays bounded."""
    observed = statistic(values[None, :])
    rng = np.random.default_rng(SEED)
    batch = max(1, BATCH_ELEMENTS // len(values))
    resampled: dict[str, list[np.ndarray]] = {name: [] for name in observed}
    for start in range(0, UNIT_RESAMPLES, batch):
        picks = rng.integers(0, len(values), size=(min(batch, UNIT_RESAMPLES - start), len(values)))
        for name, found in statistic(values[picks]).items():
            resampled[name].append(found)
    tail = (1 - CONFIDENCE) / 2 * 100
    return {
        name: (float(observed[name][0]), *np.percentile(np.concatenate(resampled[name]), [tail, 100 - tail]))
        for name in observed
    }
