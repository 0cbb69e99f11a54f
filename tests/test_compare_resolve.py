"""Compare says what it can resolve: "same within noise" only inside an equivalence margin, counts
compared as counts, and a point's key without how many processes and repeats measured it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpurepro.compare import counts, margins
from gpurepro.compare.grade import LOWER, NOISE_FLOOR, NOT_COMPARABLE, SAME, SLOWER, UNRESOLVED, grade
from gpurepro.stats import Interval
from gpurepro.tables import long_frame, single

from .test_compare_processes import _compare, _row, _run


@pytest.mark.parametrize(
    ("ratio", "low", "high", "kind", "read"),
    [
        (1.01, 0.98, 1.04, "time", SAME),  # inside ±5%
        (1.52, 0.91, 2.73, "time", UNRESOLVED),  # DeiT-B eager latency between two H200 machines
        (1.01, 0.96, 1.06, "time", UNRESOLVED),  # reaches past +5%
        (1.01, 0.96, 1.06, "energy", SAME),  # inside ±10%: NVML's accuracy on two readings
        (1.08, 1.04, 1.12, "time", SLOWER),  # excludes 1: resolved, however wide
    ],
)
def test_same_within_noise_only_inside_the_margin_of_its_kind(
    ratio: float, low: float, high: float, kind: str, read: str
) -> None:
    graded = grade(ratio, Interval(ratio, low, high), kind, "3 v 3 processes")
    assert graded.grade == read
    assert margins.MARGINS[kind].describe(kind) in graded.basis
    if read == UNRESOLVED:
        assert graded.describe().startswith("unresolved at this spread (")


def test_every_margin_says_why_and_the_floor_lies_inside_it() -> None:
    """A ratio without an interval is the same below its noise floor: that floor must not be wider than
    the margin a ratio with an interval is held to."""
    for kind, margin in margins.MARGINS.items():
        assert margin.width > 0 and len(margin.why) > 40, kind
        if kind != "dispersion":
            assert NOISE_FLOOR[kind] <= margin.width, kind


def _sgemm_counts(throttled: list[float]) -> pd.DataFrame:
    """An SGEMM point's throttled reps in one process per value, with a time beside it."""
    frames = [
        long_frame(
            {"study": "sgemm", "backend": "tiled", "n": 25536, "run": run},
            [single("throttled_reps", count, "reps"), single("time", 2300.0, "ms", "median")],
        )
        for run, count in enumerate(throttled, start=1)
    ]
    return pd.concat(frames, ignore_index=True)


def test_a_count_is_compared_as_a_count_never_by_a_time_spread(tmp_path: Path) -> None:
    """9 against 8 throttled reps (two H200 machines) is one rep, not "lower by 11.1%, resolved" from the
    SGEMM's 1% time spread; 20 against 2 is fewer beyond chance; 0 against 0 is the same count."""
    a = _run(tmp_path / "a", ("sgemm", _sgemm_counts([9.0])))
    b = _run(tmp_path / "b", ("sgemm", _sgemm_counts([8.0])))
    row = _row(_compare(a, b), metric="throttled_reps")
    assert row["kind"] == "count" and row["grade"] == UNRESOLVED
    assert "9 -> 8 (-1)" in row["summary"] and "counts compared as counts" in row["summary"]
    assert "GSD" not in row["basis"] and "11.1" not in row["summary"]
    fewer = _run(tmp_path / "c", ("sgemm", _sgemm_counts([2.0])))
    many = _run(tmp_path / "d", ("sgemm", _sgemm_counts([10.0, 10.0])))
    assert _row(_compare(many, fewer), metric="throttled_reps")["grade"] == LOWER
    none = _run(tmp_path / "e", ("sgemm", _sgemm_counts([0.0])))
    zero = _row(
        _compare(none, _run(tmp_path / "f", ("sgemm", _sgemm_counts([0.0])))), metric="throttled_reps"
    )
    assert zero["grade"] == SAME and "equal" in zero["basis"]
    # from none to some is a count too, not "A is 0: no ratio"
    assert _row(_compare(none, fewer), metric="throttled_reps")["grade"] != NOT_COMPARABLE


def test_the_rate_ratio_of_two_counts_has_its_exact_interval() -> None:
    """Conditioned on 17 events, B's 8 are binomial: Clopper-Pearson's [0.2298, 0.7219] on its share
    gives the rate ratio's [0.2983, 2.597]; per process where the sides ran different numbers."""
    interval = counts.rate_ratio_interval(np.array([9.0]), np.array([8.0]))
    assert interval.value == pytest.approx(8 / 9)
    assert (interval.low, interval.high) == pytest.approx((0.2983, 2.597), rel=1e-3)
    per_process = counts.rate_ratio_interval(np.array([9.0]), np.array([4.0, 4.0]))
    assert per_process.value == pytest.approx(4 / 9)
    assert math.isinf(counts.rate_ratio_interval(np.array([0.0]), np.array([3.0])).high)


def _speedups(repeats: int, baseline_processes: int, value: float) -> pd.DataFrame:
    """HFTA's speedup over serial at B=32, as hfta_speedup.csv keeps it: one row, counts as columns."""
    keys = {
        "study": "hfta",
        "workload": "resnet18",
        "precision": "fp16",
        "mode": "hfta",
        "step": "stock",
        "baseline": "serial",
        "baseline_step": "stock",
        "b": 32,
        "baseline_b": 1,
        "repeats": repeats,
        "processes": 3,
        "baseline_processes": baseline_processes,
    }
    return long_frame(keys, [single("speedup", value, "x")])


def test_a_points_key_leaves_out_how_many_processes_and_repeats_measured_it(tmp_path: Path) -> None:
    """One run had 4 repeats (and 4 serial processes), the other 3: the same speedup, compared, with the
    counts beside it."""
    a = _run(tmp_path / "a", ("hfta_speedup", _speedups(4, 4, 10.24)))
    b = _run(tmp_path / "b", ("hfta_speedup", _speedups(3, 3, 13.08)))
    table = _compare(a, b)
    assert len(table) == 1
    row = table.iloc[0]
    assert row["grade"] != NOT_COMPARABLE and row["kind"] == "rate"
    assert row["ratio"] == pytest.approx(13.08 / 10.24)
    assert "repeats" not in table.columns and "baseline_processes" not in table.columns
    assert row["counted_a"] == "processes=3, baseline_processes=4, repeats=4"
    assert row["counted_b"] == "processes=3, baseline_processes=3, repeats=3"
