"""Repeats over processes: the intervals across them, the across-process table, the rounds they run in."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gpurepro import process_stats, process_table, rounds
from gpurepro.hfta_study.summary import speedups


def test_the_interval_across_processes_is_a_t_interval_of_the_geometric_mean() -> None:
    values = [5.0, 10.0, 6.0]
    interval = process_stats.across_processes(values)
    logs = np.log(values)
    half = stats.t.ppf(0.975, 2) * np.std(logs, ddof=1) / math.sqrt(3)
    assert interval.value == 6.0  # the median
    assert interval.low == pytest.approx(math.exp(logs.mean() - half))
    assert interval.high == pytest.approx(math.exp(logs.mean() + half))
    assert "log scale" in interval.method


def test_one_process_gives_no_interval_and_a_negative_figure_a_linear_one() -> None:
    assert not process_stats.across_processes([5.0]).known
    signed = process_stats.across_processes([-1.0, 2.0, 3.0])
    assert signed.known and signed.low < 0 < signed.high and "log" not in signed.method


def test_the_geometric_sd_of_two_clusters() -> None:
    assert process_stats.geometric_sd([5.0, 5.0, 10.0, 10.0]) == pytest.approx(
        math.exp(np.std(np.log([5, 5, 10, 10]), ddof=1))
    )
    assert math.isnan(process_stats.geometric_sd([5.0]))


def test_a_ratio_paired_by_round_cancels_a_drift_both_points_share() -> None:
    """Both points slow down together from round to round: the paired ratio is resolved, the unpaired
    one (the same values, rounds ignored) is not."""
    fused = {1: 100.0, 2: 150.0, 3: 200.0, 4: 250.0, 5: 300.0}
    baseline = {1: 50.0, 2: 76.0, 3: 99.0, 4: 126.0, 5: 149.0}
    paired = process_stats.ratio_interval(fused, baseline)
    assert "paired by round" in paired.method and paired.excludes(1.0)
    assert paired.high - paired.low < 0.05
    unpaired = process_stats.unpaired_ratio_interval(list(fused.values()), list(baseline.values()))
    assert unpaired.known and not unpaired.excludes(2.0) and unpaired.high - unpaired.low > 1


def test_three_common_rounds_are_taken_as_independent_processes() -> None:
    """Three rounds paired leave two degrees of freedom: the two points' processes are compared as
    independent groups (Welch) instead, which resolves a difference every process shows."""
    deit_b, deit_t = {1: 16.8, 2: 32.0, 3: 27.8}, {1: 8.7, 2: 5.5, 3: 4.8}
    between = process_stats.difference_interval(deit_b, deit_t)
    assert "Welch" in between.method and between.low > 0
    paired = np.array(list(deit_b.values())) - np.array(list(deit_t.values()))
    half = stats.t.ppf(0.975, len(paired) - 1) * paired.std(ddof=1) / math.sqrt(len(paired))
    assert paired.mean() - half < 0  # what pairing the three rounds would read


def test_with_one_process_a_side_the_measured_spread_sets_the_interval() -> None:
    interval = process_stats.known_spread_ratio_interval([10.0], [7.0], log_sd=math.log(1.41))
    assert interval.value == pytest.approx(10 / 7)
    half = 1.959964 * math.log(1.41) * math.sqrt(2)
    assert interval.low == pytest.approx(10 / 7 * math.exp(-half), rel=1e-4)
    assert not interval.excludes(1.0) and "GSD 1.41" in interval.method


def _inference_rows(run: int, latency: float, status: str = "ok", reason: str = "") -> list[dict]:
    keys = {"study": "inference", "profile": "h100", "device": "0", "gpu_name": "H100", "family": "vit",
            "model": "deit-t", "seq_len": math.nan, "batch_size": 1, "precision": "fp16", "mode": "eager",
            "cast_protocol": "autocast", "run": run, "status": status, "reason": reason,
            "source_file": f"deit-t_run{run}.csv"}  # fmt: skip
    return [
        {**keys, "metric": "latency", "statistic": "median", "value": latency, "unit": "ms"},
        {**keys, "metric": "power_above_active_idle", "statistic": "mean", "value": latency * 2, "unit": "W"},
    ]


def test_the_across_process_table_counts_processes_and_keeps_a_failed_one_apart() -> None:
    """Three processes measured the point, a fourth failed: the figure stands on the three, and the
    failure is recorded with its reason."""
    rows = [*_inference_rows(1, 5.0), *_inference_rows(2, 10.0), *_inference_rows(3, 6.0)]
    rows += [{**_inference_rows(4, math.nan, "failed", "CUDA error: out of memory")[0]}]
    table = process_table.summarise(pd.DataFrame(rows), ["study", "profile", "model", "mode", "seq_len"])
    latency = table[table["metric"] == "latency"].set_index("statistic")
    assert latency.loc["processes", "value"] == 3 and latency.loc["processes", "unit"] == "processes"
    assert latency.loc["median", "value"] == 6.0 and latency.loc["median", "per_process"] == "median"
    expected = process_stats.across_processes([5.0, 10.0, 6.0])
    assert latency.loc["ci_low", "value"] == pytest.approx(expected.low)
    assert latency["runs"].iloc[0] == "1,2,3"
    failed = table[table["metric"] == "failed_processes"]
    assert failed["value"].tolist() == [1.0]
    assert "run 4: failed: CUDA error: out of memory" in failed["reason"].iloc[0]


def test_a_points_processes_on_different_gpus_are_pooled_and_the_row_names_them() -> None:
    """With claim-affine placement a point's group may run on GPU 1 in rounds 1 and 2 and on GPU 3 in
    round 3: the three processes make one row (not one per GPU, which left claims with two rows where
    they read one), and the row lists both GPUs."""
    rows = [*_inference_rows(1, 5.0), *_inference_rows(2, 10.0), *_inference_rows(3, 6.0)]
    for row, device in zip(rows, ["1", "1", "1", "1", "3", "3"], strict=True):
        row["device"] = device
    table = process_table.summarise(pd.DataFrame(rows), ["study", "profile", "device", "model", "mode"])
    latency = table[(table["metric"] == "latency") & (table["statistic"] == "processes")]
    assert latency["value"].tolist() == [3.0] and latency["device"].tolist() == ["1,3"]
    assert list(table.columns[:5]) == ["study", "profile", "model", "mode", "device"]


def _hfta_rows(mode: str, b: int, run: int, throughput: float) -> dict:
    return {"study": "hfta", "profile": "h100", "gpu_name": "H100", "workload": "resnet18", "batch_size": 128,
            "image_size": 64, "seq_len": 128, "precision": "fp16", "mode": mode, "step": "stock", "b": b,
            "run": run, "status": "ok", "metric": "throughput", "statistic": "value", "value": throughput,
            "unit": "samples/s"}  # fmt: skip


def test_hfta_speedups_carry_intervals_paired_by_run() -> None:
    rows = []
    for run, scale in ((1, 1.0), (2, 1.3), (3, 0.8), (4, 1.1), (5, 0.9)):
        rows += [_hfta_rows("serial", 1, run, 10_000 * scale), _hfta_rows("mps", 8, run, 80_000 * scale)]
        rows += [_hfta_rows("hfta", 8, run, 120_000 * scale)]
    summary = speedups(pd.DataFrame(rows))
    mps = summary[(summary["metric"] == "speedup") & (summary["baseline"] == "mps")].set_index("statistic")
    assert mps.loc["max", "value"] == pytest.approx(1.5)
    # every run's ratio is 1.5: the paired interval is that value exactly
    assert mps.loc["max_ci_low", "value"] == pytest.approx(1.5)
    assert mps.loc["max_ci_high", "value"] == pytest.approx(1.5)
    one_run = speedups(pd.DataFrame([r for r in rows if r["run"] == 1]))
    ends = one_run[one_run["statistic"].isin(["max_ci_low", "max_ci_high"])]["value"]
    assert ends.isna().all()


def test_rounds_run_every_point_before_the_next_round_of_any() -> None:
    points = [
        {"model": "deit-t", "mode": "eager", "batch": 1},
        {"model": "deit-b", "mode": "cudagraph", "batch": 1},
    ]
    section = {"repeats": {"host_paced": 3, "gpu_bound": 2}}
    runs = rounds.with_runs(
        points, lambda p: rounds.repeats(section, rounds.inference_host_paced(p["mode"], p["batch"]))
    )
    assert [(p["model"], p["run"]) for p in runs] == [
        ("deit-t", 1), ("deit-b", 1), ("deit-t", 2), ("deit-b", 2), ("deit-t", 3),
    ]  # fmt: skip
    pattern = "{model}_run{run}.csv"
    assert rounds.previous_round(pattern, runs, 1) == []
    assert rounds.previous_round(pattern, runs, 3) == ["deit-t_run2.csv", "deit-b_run2.csv"]
    assert rounds.repeats({"repeats": 4}, host_paced=False) == 4 and rounds.repeats({}, True) == 1
    assert rounds.hfta_host_paced("serial", "graphed", 32) and not rounds.hfta_host_paced("hfta", "stock", 32)
