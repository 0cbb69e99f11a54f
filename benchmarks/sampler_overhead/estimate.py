"""What a row's pairs say: the per-pair on/off ratios, their median and trimmed mean of logs, each with
a 95% bootstrap interval, and the verdict of the mean against the target overhead."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.stats import trim_mean

from gpurepro import stats

from .rows import Row

TARGET = 0.005  # the overhead the verdict column judges against: 0.5%

TRIM = 0.2  # the share of per-pair log ratios cut at either end before their mean (see log_mean)


@dataclass(frozen=True)
class Ratios:
    """The per-pair on/off ratios of a row: their median and mean (see log_mean), and quartiles."""

    median: stats.Interval
    mean: stats.Interval
    q1: float
    q3: float


def log_mean(ratios: np.ndarray, trim: float, axis: int = -1) -> np.ndarray:
    """exp of the mean of the log ratios along `axis`, `trim` of them cut at either end first.
    Logs, so that a pair's ratio r and its inverse 1/r weigh alike. Without a sampler the on and off
    blocks of a pair are alike, so their log ratio is symmetric about 0 whatever the blocks' noise, and
    a cost that every on-block bears shifts it: median, mean and trimmed mean all estimate that shift,
    and differ in how wide their intervals are. Simulated with 200 pairs, relative to the median's: for
    normal noise the mean 0.82, 10% trimmed 0.84, 20% trimmed 0.86; for Laplace noise 1.36, 1.17, 1.09;
    for 5% of pairs ten times as noisy 1.89, 0.85, 0.87. On a 2-core CPU host (no-sampler rows of 100
    to 400 pairs, log ratios of kurtosis above 20: a few blocks many times slower) 20% trimmed was 0.8
    to 1.5 times as wide as the median, the mean 1.1 to 35 times. Hence 20% by default. A cost only a
    few on-blocks bore would be cut with the tails: --trim 0 keeps every pair, in the plain mean."""
    return np.exp(trim_mean(np.log(ratios), trim, axis=axis))


def pair_ratios(row: Row, trim: float = TRIM) -> Ratios:
    """Both statistics with their 95% percentile bootstrap intervals (gpurepro.stats), seeded alike, so
    over the same resamples of the pairs, and a row prints the same twice."""
    ratios = np.array(row.on_s) / np.array(row.off_s)
    q1, q3 = np.percentile(ratios, [25, 75])
    return Ratios(
        stats.median_interval(ratios),
        stats.bootstrap([ratios], partial(log_mean, trim=trim)),
        float(q1),
        float(q3),
    )


def verdict(estimate: stats.Interval, target: float) -> str:
    """The cost against target: below it where the whole interval is, at or above it where the whole
    interval is above, else unresolved (more pairs, or less noise, would be needed to tell)."""
    limit, label = 1 + target, f"{target * 100:g}%"
    if estimate.high < limit:
        return f"<{label}"
    if estimate.low > limit:
        return f">={label}"
    return "unresolved"
