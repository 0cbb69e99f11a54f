"""benchmarks/telemetry_overhead.py off the GPU: its estimator, verdict and garbage-collector handling
(in its parts, benchmarks/sampler_overhead/), and the script itself starting."""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpurepro.stats import Interval

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# benchmarks/ is no package: the script imports its parts from beside it, and so do these tests.
sys.path.insert(0, str(BENCHMARKS))

from sampler_overhead import blocks, collector, estimate, rows, table  # noqa: E402


def row_of(ratios: np.ndarray) -> rows.Row:
    """A row whose pairs have these on/off ratios."""
    return rows.Row(off_s=[0.1] * len(ratios), on_s=list(0.1 * ratios))


def test_trimmed_mean_ignores_a_few_wild_pairs_the_plain_mean_follows() -> None:
    ratios = np.full(100, 1.001)
    ratios[:5] = 3.0  # five blocks with a hiccup
    assert float(estimate.log_mean(ratios, 0.2)) == pytest.approx(1.001)
    assert float(estimate.log_mean(ratios, 0.0)) > 1.05
    # logs: a pair of ratio r and one of 1/r average to 1, where their plain mean would exceed it
    assert float(estimate.log_mean(np.array([1.25, 0.8]), 0.0)) == pytest.approx(1.0)


def test_interval_resolves_a_small_cost_and_brackets_it() -> None:
    rng = np.random.default_rng(1)
    ratios = 1.002 * np.exp(rng.normal(0, 0.01, 300))
    estimates = estimate.pair_ratios(row_of(ratios))
    for statistic in (estimates.mean, estimates.median):
        assert statistic.low < 1.002 < statistic.high
        assert statistic.low < statistic.value < statistic.high
    assert estimates.mean.high < 1.005  # 1% noise over 300 pairs: +-0.13%
    assert estimates.q1 < 1.002 < estimates.q3
    assert estimate.verdict(estimates.mean, 0.005) == "<0.5%"
    costly = estimate.pair_ratios(row_of(ratios * 1.01 / 1.002)).mean  # the same noise about 1.01
    assert costly.low < 1.01 < costly.high
    assert estimate.verdict(costly, 0.005) == ">=0.5%"


def test_interval_widens_with_noise_until_unresolved() -> None:
    rng = np.random.default_rng(2)
    ratios = 1.002 * np.exp(rng.normal(0, 0.05, 100))  # 5% noise, 100 pairs: about +-1%
    mean = estimate.pair_ratios(row_of(ratios)).mean
    assert mean.high - mean.low > 0.01
    assert estimate.verdict(mean, 0.005) == "unresolved"


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.99, 1.0049, "<0.5%"),
        (1.0051, 1.02, ">=0.5%"),
        (0.999, 1.006, "unresolved"),
        (1.005, 1.01, "unresolved"),  # a bound on the target itself resolves nothing
    ],
)
def test_verdict_against_the_target(low: float, high: float, expected: str) -> None:
    assert estimate.verdict(Interval((low + high) / 2, low, high), 0.005) == expected


def test_verdict_labels_the_target() -> None:
    assert estimate.verdict(Interval(1.0, 0.99, 1.001), 0.0025) == "<0.25%"


class Allocating:
    """A step that briefly holds a few thousand tracked objects: enough to start the collector."""

    def __call__(self) -> None:
        held = [{} for _ in range(3000)]
        del held


def no_sampler_args(keep_gc: bool) -> argparse.Namespace:
    return argparse.Namespace(pairs=4, thread_pairs=4, keep_gc=keep_gc)


def test_row_runs_with_the_collector_off_and_restores_it() -> None:
    work = blocks.Work("allocations", Allocating(), lambda: None)
    assert gc.isenabled()
    row = rows.run_row(no_sampler_args(keep_gc=False), work, 3, None, rows.NO_SAMPLER, 0.0)
    assert row.collections == 0
    assert len(row.off_s) == len(row.on_s) == 4
    assert gc.isenabled() and gc.get_freeze_count() == 0
    kept = rows.run_row(no_sampler_args(keep_gc=True), work, 3, None, rows.NO_SAMPLER, 0.0)
    assert kept.collections > 0  # the same work does start collections with the collector on


def test_collector_restored_when_a_row_fails() -> None:
    with pytest.raises(RuntimeError), collector.collector_off():
        assert not gc.isenabled() and gc.get_freeze_count() > 0
        raise RuntimeError("a block failed")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_collector_left_off_if_it_was() -> None:
    gc.disable()
    try:
        with collector.collector_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_row_leaves_out_its_first_block() -> None:
    calls: list[bool] = []

    def run_block(on: bool) -> tuple[float, float, float]:
        calls.append(on)
        return 0.1, 0.0, 0.1

    row = rows.alternate(3, run_block)
    assert calls[0] is False and len(calls) == 7
    assert len(row.off_s) == len(row.on_s) == 3
    assert sorted(calls[1:]) == [False] * 3 + [True] * 3


def test_rows_line_up_with_the_header() -> None:
    rng = np.random.default_rng(3)
    row = row_of(np.exp(rng.normal(0, 0.01, 20)))
    line = table.format_row("resnet18", "process", 200.0, row, 0.2, 0.005)
    assert len(line) == len(table.HEADER)
    assert line.split()[-1] in {"<0.5%", ">=0.5%", "unresolved"}


def test_on_blocks_without_a_deadline_are_left_out_of_the_achieved_rate() -> None:
    # a 0.05 s block at 50 Hz can hold no deadline once a resumed sampler is back on its schedule
    row = rows.Row(achieved_hz=[50.0, float("nan"), 40.0], missed=1)
    assert table.achieved_columns(row).split() == ["45.0", "40.0", "1"]
    assert table.achieved_columns(rows.Row(achieved_hz=[float("nan")])).split() == ["-", "-", "-"]


def test_the_script_starts_from_its_parts() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "telemetry_overhead.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "How much does the telemetry sampler slow the work it measures" in result.stdout
    assert "--thread-pairs" in result.stdout
