"""benchmarks/telemetry_overhead.py off the GPU: its estimator, verdict and garbage-collector handling."""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from gpurepro.stats import Interval

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "telemetry_overhead.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """The script as a module (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("telemetry_overhead", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def row_of(bench: ModuleType, ratios: np.ndarray) -> object:
    """A row whose pairs have these on/off ratios."""
    return bench.Row(off_s=[0.1] * len(ratios), on_s=list(0.1 * ratios))


def test_trimmed_mean_ignores_a_few_wild_pairs_the_plain_mean_follows(bench: ModuleType) -> None:
    ratios = np.full(100, 1.001)
    ratios[:5] = 3.0  # five blocks with a hiccup
    assert float(bench.log_mean(ratios, 0.2)) == pytest.approx(1.001)
    assert float(bench.log_mean(ratios, 0.0)) > 1.05
    # logs: a pair of ratio r and one of 1/r average to 1, where their plain mean would exceed it
    assert float(bench.log_mean(np.array([1.25, 0.8]), 0.0)) == pytest.approx(1.0)


def test_interval_resolves_a_small_cost_and_brackets_it(bench: ModuleType) -> None:
    rng = np.random.default_rng(1)
    ratios = 1.002 * np.exp(rng.normal(0, 0.01, 300))
    estimates = bench.pair_ratios(row_of(bench, ratios))
    for estimate in (estimates.mean, estimates.median):
        assert estimate.low < 1.002 < estimate.high
        assert estimate.low < estimate.value < estimate.high
    assert estimates.mean.high < 1.005  # 1% noise over 300 pairs: +-0.13%
    assert estimates.q1 < 1.002 < estimates.q3
    assert bench.verdict(estimates.mean, 0.005) == "<0.5%"
    costly = bench.pair_ratios(row_of(bench, ratios * 1.01 / 1.002)).mean  # the same noise about 1.01
    assert costly.low < 1.01 < costly.high
    assert bench.verdict(costly, 0.005) == ">=0.5%"


def test_interval_widens_with_noise_until_unresolved(bench: ModuleType) -> None:
    rng = np.random.default_rng(2)
    ratios = 1.002 * np.exp(rng.normal(0, 0.05, 100))  # 5% noise, 100 pairs: about +-1%
    mean = bench.pair_ratios(row_of(bench, ratios)).mean
    assert mean.high - mean.low > 0.01
    assert bench.verdict(mean, 0.005) == "unresolved"


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.99, 1.0049, "<0.5%"),
        (1.0051, 1.02, ">=0.5%"),
        (0.999, 1.006, "unresolved"),
        (1.005, 1.01, "unresolved"),  # a bound on the target itself resolves nothing
    ],
)
def test_verdict_against_the_target(bench: ModuleType, low: float, high: float, expected: str) -> None:
    assert bench.verdict(Interval((low + high) / 2, low, high), 0.005) == expected


def test_verdict_labels_the_target(bench: ModuleType) -> None:
    assert bench.verdict(Interval(1.0, 0.99, 1.001), 0.0025) == "<0.25%"


class Allocating:
    """A step that briefly holds a few thousand tracked objects: enough to start the collector."""

    def __call__(self) -> None:
        held = [{} for _ in range(3000)]
        del held


def no_sampler_args(keep_gc: bool) -> argparse.Namespace:
    return argparse.Namespace(pairs=4, thread_pairs=4, keep_gc=keep_gc)


def test_row_runs_with_the_collector_off_and_restores_it(bench: ModuleType) -> None:
    work = bench.Work("allocations", Allocating(), lambda: None)
    assert gc.isenabled()
    row = bench.run_row(no_sampler_args(keep_gc=False), work, 3, None, bench.NO_SAMPLER, 0.0)
    assert row.collections == 0
    assert len(row.off_s) == len(row.on_s) == 4
    assert gc.isenabled() and gc.get_freeze_count() == 0
    kept = bench.run_row(no_sampler_args(keep_gc=True), work, 3, None, bench.NO_SAMPLER, 0.0)
    assert kept.collections > 0  # the same work does start collections with the collector on


def test_collector_restored_when_a_row_fails(bench: ModuleType) -> None:
    with pytest.raises(RuntimeError), bench.collector_off():
        assert not gc.isenabled() and gc.get_freeze_count() > 0
        raise RuntimeError("a block failed")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_collector_left_off_if_it_was(bench: ModuleType) -> None:
    gc.disable()
    try:
        with bench.collector_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_row_leaves_out_its_first_block(bench: ModuleType) -> None:
    calls: list[bool] = []

    def run_block(on: bool) -> tuple[float, float, float]:
        calls.append(on)
        return 0.1, 0.0, 0.1

    row = bench.alternate(3, run_block)
    assert calls[0] is False and len(calls) == 7
    assert len(row.off_s) == len(row.on_s) == 3
    assert sorted(calls[1:]) == [False] * 3 + [True] * 3


def test_rows_line_up_with_the_header(bench: ModuleType) -> None:
    rng = np.random.default_rng(3)
    row = row_of(bench, np.exp(rng.normal(0, 0.01, 20)))
    line = bench.format_row("resnet18", "process", 200.0, row, 0.2, 0.005)
    assert len(line) == len(bench.HEADER)
    assert line.split()[-1] in {"<0.5%", ">=0.5%", "unresolved"}


def test_on_blocks_without_a_deadline_are_left_out_of_the_achieved_rate(bench: ModuleType) -> None:
    # a 0.05 s block at 50 Hz can hold no deadline once a resumed sampler is back on its schedule
    row = bench.Row(achieved_hz=[50.0, float("nan"), 40.0], missed=1)
    assert bench.achieved_columns(row).split() == ["45.0", "40.0", "1"]
    assert bench.achieved_columns(bench.Row(achieved_hz=[float("nan")])).split() == ["-", "-", "-"]
