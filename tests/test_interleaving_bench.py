"""benchmarks/interleaving.py: the orders it measures in, and the spread it reports."""

from __future__ import annotations

import math
import random

import pytest

from .conftest import benchmark_script

bench = benchmark_script("interleaving")


def test_interleaved_runs_alternate_the_sides_pair_by_pair_in_a_seeded_order() -> None:
    first = bench.order("interleaved", 6, random.Random(3))
    assert first == bench.order("interleaved", 6, random.Random(3))  # seeded: the same again
    pairs = [first[i : i + 2] for i in range(0, 12, 2)]
    assert all(set(pair) == {bench.SERIAL, bench.FUSED} for pair in pairs)
    assert len({tuple(pair) for pair in pairs}) == 2  # both orders occur: AB and BA


def test_blocked_runs_measure_one_side_then_the_other() -> None:
    sides = bench.order("blocked", 3, random.Random(0))
    assert sides[:3] == [sides[0]] * 3 and sides[3:] == [sides[3]] * 3 and sides[0] != sides[3]


def test_the_spread_of_ratios_is_their_geometric_sd_and_range() -> None:
    gsd, max_over_min = bench.spread([10.0, 12.0, 9.6])
    assert max_over_min == pytest.approx(1.25)
    assert gsd == pytest.approx(math.exp(_stdev([math.log(10), math.log(12), math.log(9.6)])))
    assert math.isnan(bench.spread([10.0])[0])


def _stdev(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
