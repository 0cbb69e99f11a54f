"""benchmarks/interleaving.py: the orders it measures in, and the spread it reports."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pandas as pd
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


def _table(rows: list[tuple[str, int, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"scheme": s, "run": r, "position": i, "side": side, "samples_per_s": v}
            for i, (s, r, side, v) in enumerate(rows)
        ]
    )


def test_a_run_cut_short_is_left_out_of_the_spread_and_named() -> None:
    serial, fused = bench.SERIAL.name, bench.FUSED.name
    table = _table(
        [
            ("blocked", 1, serial, 10.0),
            ("blocked", 1, serial, 12.0),
            ("blocked", 1, fused, 110.0),
            ("blocked", 1, fused, 110.0),
            ("blocked", 2, serial, 10.0),
            ("blocked", 2, serial, 10.0),
            ("blocked", 2, fused, 120.0),
            ("blocked", 2, fused, 120.0),
            ("blocked", 3, serial, 50.0),
        ]  # fmt: skip
    )
    assert bench.complete_runs(table, "blocked", 2) == [1, 2]
    lines = bench.summarise(table, 2, "fp16")
    blocked = next(line for line in lines if line.startswith("blocked"))
    assert "runs 10.00, 12.00x" in blocked and "run 3 incomplete, left out" in blocked
    assert any(line.startswith("interleaved") and "no complete run" in line for line in lines)


def test_the_shipped_measurement_summarises_from_its_csv(tmp_path: Path) -> None:
    shipped = Path(__file__).parents[1] / "benchmarks" / "measured" / "interleaving-h200-2026-11-29.csv"
    table = pd.read_csv(shipped)
    assert set(table.columns) == {"scheme", "run", "position", "side", "samples_per_s"}
    for scheme in bench.SCHEMES:  # every run it counts measured both sides in full
        for run in bench.complete_runs(table, scheme, 2):
            sides = table[(table["scheme"] == scheme) & (table["run"] == run)]["side"].value_counts()
            assert sides[bench.SERIAL.name] == 2 and sides[bench.FUSED.name] == 2
