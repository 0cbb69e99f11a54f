"""gpurepro.stats: seeded bootstrap intervals and permutation p-values, with known answers, the cases
that give no interval (one value, an empty sample) and the spread between groups, whose interval must
reach 0 where the groups differ by less than their noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpurepro import stats


def alike(n: int, gap: float, seed: int = 0) -> list[np.ndarray]:
    """Two samples of one distribution (1% noise), the second scaled so their medians lie `gap` apart."""
    rng = np.random.default_rng(seed)
    first, second = rng.normal(10.0, 0.1, n), rng.normal(10.0, 0.1, n)
    return [first, second * (1 + gap) * np.median(first) / np.median(second)]


def test_median_interval_brackets_the_median_about_as_wide_as_theory() -> None:
    values = np.random.default_rng(1).normal(0.0, 1.0, 400)
    interval = stats.median_interval(values)
    assert interval.value == pytest.approx(np.median(values))
    assert interval.low < interval.value < interval.high
    # a normal sample's median: standard error 1.2533 / sqrt(n), so a 95% interval about +-0.123
    assert 0.08 < (interval.high - interval.low) / 2 < 0.17


def test_known_values_of_ratio_difference_and_mean() -> None:
    assert stats.ratio_interval([4.0, 6.0, 5.0], [2.0, 3.0, 2.5]).value == pytest.approx(2.0)
    assert stats.difference_interval([3.0, 5.0], [1.0, 1.0]).value == pytest.approx(3.0)
    assert stats.mean_interval([1.0, 2.0, 6.0]).value == pytest.approx(3.0)


def test_seeded_so_the_same_call_gives_the_same_interval() -> None:
    values = np.random.default_rng(2).normal(5.0, 1.0, 50)
    assert stats.median_interval(values) == stats.median_interval(values)
    assert stats.median_interval(values, seed=1) != stats.median_interval(values)
    assert stats.permutation_p_value(values, values + 0.3) == stats.permutation_p_value(values, values + 0.3)


def test_constant_samples_give_a_point_interval() -> None:
    interval = stats.ratio_interval([2.0] * 5, [1.0] * 5)
    assert (interval.value, interval.low, interval.high) == (2.0, 2.0, 2.0)
    assert interval.known and interval.excludes(1.0)


def test_nan_values_are_dropped_first() -> None:
    assert stats.median_interval([1.0, math.nan, 2.0, 3.0]) == stats.median_interval([1.0, 2.0, 3.0])
    assert stats.permutation_p_value([1.0, math.nan], [2.0, 3.0]) != stats.permutation_p_value(
        [1.0, 4.0], [2.0, 3.0]
    )


def test_one_value_or_none_gives_no_interval() -> None:
    one = stats.ratio_interval([2.0], [1.0, 1.1])
    assert one.value == pytest.approx(2 / 1.05) and math.isnan(one.low) and not one.known
    assert not one.excludes(1.0) and "no interval" in one.describe()
    assert math.isnan(stats.median_interval([math.nan]).value)
    assert math.isnan(stats.permutation_p_value([1.0], [2.0, 3.0]))


def test_spread_far_beyond_the_noise_is_resolved() -> None:
    groups = alike(100, 0.05)
    spread = stats.spread_pct_interval(groups)
    assert spread.value == pytest.approx(5.0)
    assert spread.low > 0 and spread.low < 5.0 < spread.high
    assert stats.spread_p_value(groups) < 0.05


def test_spread_within_the_noise_reaches_zero() -> None:
    groups = alike(100, 0.002)  # the two H200s: 0.2% apart, reps 1% apart
    spread = stats.spread_pct_interval(groups)
    assert spread.value == pytest.approx(0.2)
    assert spread.low == 0 and spread.high > 0.2 and not spread.excludes(0)
    assert stats.spread_p_value(groups) > 0.05


def test_spread_of_many_alike_groups_is_not_read_as_a_difference() -> None:
    # the extremes of eight alike GPUs lie apart by chance; picked first, they would look resolved
    rng = np.random.default_rng(3)
    groups = [rng.normal(10.0, 0.1, 300) for _ in range(8)]
    assert stats.spread_pct_interval(groups).low == 0
    assert stats.spread_p_value(groups) > 0.05


def test_spread_of_single_values_or_constant_groups() -> None:
    single = stats.spread_pct_interval([[10.0], [11.0]])
    assert single.value == pytest.approx(10.0) and math.isnan(single.low) and math.isnan(single.high)
    assert math.isnan(stats.spread_p_value([[10.0], [11.0]]))
    constant = stats.spread_pct_interval([[10.0] * 3, [11.0] * 3])
    assert constant.low == constant.high == pytest.approx(10.0)


def test_each_group_against_the_median_group() -> None:
    rng = np.random.default_rng(4)
    groups = [9.0 + rng.normal(0, 0.01, 50), 10.0 + rng.normal(0, 0.01, 50), 11.0 + rng.normal(0, 0.01, 50)]
    intervals = stats.relative_to_median_intervals(groups)
    values = [np.median(g) / np.median([np.median(h) for h in groups]) for g in groups]
    assert [i.value for i in intervals] == pytest.approx(values)
    assert all(i.low <= i.value <= i.high for i in intervals)
    # an odd count's middle group stays the median in every resample: 1 against itself, exactly
    assert (intervals[1].low, intervals[1].high) == (1.0, 1.0)
    assert intervals[0].excludes(1.0) and intervals[2].excludes(1.0)
    single = stats.relative_to_median_intervals([[9.0], [10.0, 10.1]])
    assert single[0].value == pytest.approx(9.0 / 9.525) and not single[0].known
