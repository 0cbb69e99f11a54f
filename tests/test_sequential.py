"""Repeated looks at a claim: the boundaries the error spending gives against published tables, the
overall error a claim judged after every round keeps under no difference, and a look's interval against
the interval built at its level directly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from gpurepro import process_stats, sequential


@pytest.mark.parametrize("looks, nominal", [(2, 0.0294), (3, 0.0221), (4, 0.0182), (5, 0.0158)])
def test_a_constant_boundary_over_equal_looks_is_pococks(looks: int, nominal: float) -> None:
    """Pocock (1977), Table 1, two-sided 5%: the nominal level of each of K equally spaced looks."""
    times = [k / looks for k in range(1, looks + 1)]

    def excess(c: float) -> float:
        return sum(sequential.crossing_probabilities(times, [c] * looks)) - 0.05

    c = optimize.brentq(excess, 1.5, 4.0)
    assert 2 * stats.norm.sf(c) == pytest.approx(nominal, abs=1e-4)


def test_pocock_type_spending_over_five_equal_looks() -> None:
    """Lan and DeMets' Pocock-type spending, two-sided 5%, five equal looks: 2.438, 2.427, 2.410, 2.397,
    2.386 (as gsDesign's sfLDPocock and Jennison and Turnbull's tables give them)."""
    found = sequential.boundaries("pocock", 0.05, [0.2, 0.4, 0.6, 0.8, 1.0])
    assert found == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)


def test_obrien_fleming_type_spending_is_strict_early_and_spends_alpha_in_all() -> None:
    times = [0.3, 0.5, 0.75, 1.0]
    bounds = sequential.boundaries("obrien_fleming", 0.05, times)
    assert bounds[0] == pytest.approx(stats.norm.isf(0.025) / math.sqrt(0.3), rel=1e-6)
    assert bounds == sorted(bounds, reverse=True) and 1.96 < bounds[-1] < 2.1
    assert sum(sequential.crossing_probabilities(times, bounds)) == pytest.approx(0.05, abs=1e-4)


def test_the_looks_follow_the_processes_and_stop_at_the_cap() -> None:
    assert sequential.information_times(3, 10, 7) == pytest.approx([k / 10 for k in range(3, 11)])
    assert sequential.information_times(3, 5, 7) == pytest.approx([0.6, 0.8, 1.0])
    assert sequential.information_times(3, 10, 0) == [1.0]


def _false_resolutions(levels: list[float], simulations: int = 20_000) -> float:
    """The share of claims with no difference at all (every process N(0, 1)) that some look resolves:
    its t-interval over the processes so far, at that look's confidence, excludes 0. Look k reads 2 + k
    processes, as a point a claim reads does after k - 1 rounds."""
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((simulations, 2 + len(levels)))
    resolved = np.zeros(simulations, dtype=bool)
    for k, level in enumerate(levels, start=1):
        n = 2 + k
        sample = draws[:, :n]
        half = stats.t.isf((1 - level) / 2, n - 1) * sample.std(axis=1, ddof=1) / math.sqrt(n)
        resolved |= np.abs(sample.mean(axis=1)) > half
    return float(resolved.mean())


def test_judging_after_every_round_keeps_the_overall_error_near_alpha() -> None:
    """Eight looks at 95% each resolve a claim that sits on its edge about 3x as often as one look;
    at the spending's levels the overall error stays near 5% (within the simulation's and the normal
    approximation's error)."""
    times = sequential.information_times(3, 10, 7)
    spent = [1 - level for level in sequential.nominal_levels("pocock", 0.05, times)]
    naive = _false_resolutions([0.95] * len(times))
    corrected = _false_resolutions(spent)
    assert naive > 0.12
    assert 0.035 < corrected < 0.065


def test_an_interval_rebuilt_at_a_looks_level_is_the_one_built_there() -> None:
    """A t-interval over processes at 95%, rebuilt at 98.7% (a look's level), equals the t-interval
    over the same processes built at 98.7%, on the log scale as across_processes builds it."""
    processes = [40_100.0, 52_300.0, 36_900.0, 44_000.0]
    at_95 = process_stats.across_processes(processes, 0.95)
    direct = process_stats.across_processes(processes, 0.987)
    rebuilt = sequential.widened(at_95.low, at_95.high, 0.95, 0.987, dof=3, log=True)
    assert rebuilt == pytest.approx((direct.low, direct.high), rel=1e-9)
    assert sequential.widened(1.0, 3.0, 0.95, 0.95, dof=None, log=False) == (1.0, 3.0)
