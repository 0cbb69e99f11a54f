"""The variability tables: every rep of every GPU in one table, per-GPU medians relative to the median GPU,
and the spread across GPUs (max/min, CV), from raw files written the way jobs write them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpurepro.errors import GpureproError
from gpurepro.results import write_raw
from gpurepro.sgemm.kernels import KernelSgemm
from gpurepro.variability.summary import gpu_samples, summarise

from .conftest import run_gpurepro
from .test_campaign_node import FAST
from .test_stats import alike


def _raw_file(folder: Path, gpu: int, run: int, ms: list[float], throttled: list[bool]) -> Path:
    n = 1024
    reps = pd.DataFrame({
        "profile": "h100", "device": str(gpu), "backend": "cublas", "n": n, "data_mode": "random", "run": run,
        "rep": range(len(ms)), "ms": ms, "tflops": [2 * n**3 / (t * 1e-3) / 1e12 for t in ms],
        "power_w_median": 600.0 + gpu, "sm_clock_mhz_median": 1980.0 - 20 * gpu, "temperature_c_median": 50.0,
        "throttled": throttled, "clock_event_names": ["sw_power_cap" if t else "" for t in throttled],
    })  # fmt: skip
    sidecar = {
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{gpu}", "serial": str(gpu)}],
        "measurement": {
            "idle": {str(gpu): {"power_w": 80.0}},
            "energy": {str(gpu): {"energy_per_op_j": 1.5 + gpu, "energy_per_op_above_idle_j": 1.0}},
            "cooldown": {"status": "plateau"},
        },
    }
    return write_raw(reps, folder / f"cublas_gpu{gpu}_run{run}.csv", sidecar)


def test_spread_between_gpus(tmp_path: Path) -> None:
    paths = [
        _raw_file(tmp_path, 0, 1, [10.0, 10.0, 10.0], [False] * 3),
        _raw_file(tmp_path, 0, 2, [10.0, 10.0, 10.0], [False] * 3),
        _raw_file(tmp_path, 1, 1, [11.0, 11.0, 11.0], [False, True, False]),
        _raw_file(tmp_path, 1, 2, [11.0, 11.0, 12.0], [False] * 3),
    ]
    reps_out, summary_out = tmp_path / "reps.csv", tmp_path / "summary.csv"
    result = run_gpurepro("aggregate", "variability", *map(str, paths), "--out", str(reps_out),
                          "--summary", str(summary_out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    reps = pd.read_csv(reps_out)
    assert len(reps) == 12 and set(reps["gpu_uuid"]) == {"GPU-0", "GPU-1"}
    summary = pd.read_csv(summary_out)

    def value(scope: str, metric: str, statistic: str) -> float:
        row = summary[
            (summary["scope"] == scope) & (summary["metric"] == metric) & (summary["statistic"] == statistic)
        ]
        return float(row["value"].item())

    assert value("gpu 0", "time", "median") == 10.0 and value("gpu 1", "time", "median") == 11.0
    assert value("across gpus", "time", "max_over_min") == pytest.approx(1.1)
    assert value("across gpus", "time", "spread_pct") == pytest.approx(10.0)
    assert value("across gpus", "time", "cv") == pytest.approx(0.5 / 10.5)
    # two GPUs: the median GPU sits between them, so each is ~5% off it in rate
    assert value("gpu 0", "rate_vs_median_gpu", "value") == pytest.approx(2 / (1 + 10 / 11))
    assert value("gpu 1", "throttled_reps", "value") == 1 and value("gpu 0", "throttled_reps", "value") == 0
    seen = summary[(summary["scope"] == "gpu 1") & (summary["metric"] == "clock_event_reasons_seen")]
    assert seen["unit"].item() == "sw_power_cap"
    assert value("across gpus", "energy_per_rep", "max_over_min") == pytest.approx(2.5 / 1.5)
    # 10 ms against 11-12 ms, every rep: the spread is resolved from the reps' noise
    assert (
        0
        < value("across gpus", "time", "spread_pct_ci_low")
        <= 10.0
        <= value("across gpus", "time", "spread_pct_ci_high")
    )
    # six reps each, nearly all tied: medians of shuffled reps often lie as far apart, so p is large here
    assert 0 < value("across gpus", "time", "p_value") <= 1
    units = summary.set_index(["scope", "metric", "statistic"])["unit"]
    assert units["across gpus", "rate", "spread_pct_ci_high"] == "%"
    assert (
        units["across gpus", "rate", "p_value"] == "1"
        and units["gpu 0", "rate_vs_median_gpu", "ci_low"] == "1"
    )

    plot = tmp_path / "variability.png"
    drawn = run_gpurepro("plot", "variability", str(reps_out), "--out", str(plot))
    assert drawn.returncode == 0, drawn.stderr
    assert plot.read_bytes()[:4] == b"\x89PNG"


def made_reps(ms: list[np.ndarray], runs: int = 2) -> pd.DataFrame:
    """Reps of GPUs 0, 1, ... with these times, split evenly over `runs` runs (one raw file each)."""
    frames = []
    for gpu, times in enumerate(ms):
        for run, run_ms in enumerate(np.array_split(times, runs), start=1):
            frames.append(pd.DataFrame({
                "profile": "h200", "device": str(gpu), "gpu_uuid": f"GPU-{gpu}", "backend": "cublas",
                "n": 1024, "run": run, "ms": run_ms, "tflops": 2 * 1024**3 / (run_ms * 1e-3) / 1e12,
                "power_w_median": 600.0, "sm_clock_mhz_median": 1980.0, "temperature_c_median": 50.0,
                "energy_per_rep_j": 1.5 + 0.01 * run, "throttled": False, "clock_event_names": "",
                "source_file": f"gpu{gpu}_run{run}.csv",
            }))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def statistics_of(summary: pd.DataFrame, scope: str, metric: str) -> dict[str, float]:
    rows = summary[(summary["scope"] == scope) & (summary["metric"] == metric)]
    return dict(zip(rows["statistic"], rows["value"], strict=True))


def test_a_difference_far_beyond_the_noise_is_resolved() -> None:
    summary = summarise(made_reps(alike(100, 0.05)))
    for metric in ("time", "rate"):
        across = statistics_of(summary, "across gpus", metric)
        assert across["spread_pct"] == pytest.approx(5.0)
        assert 0 < across["spread_pct_ci_low"] < 5.0 < across["spread_pct_ci_high"]
        assert across["p_value"] < 0.05
    for gpu in ("gpu 0", "gpu 1"):
        relative = statistics_of(summary, gpu, "rate_vs_median_gpu")
        assert relative["ci_low"] < relative["value"] < relative["ci_high"]
        assert not relative["ci_low"] < 1 < relative["ci_high"]


def test_a_difference_within_the_noise_is_not_resolved() -> None:
    # two H200s: cuBLAS 0.2% apart between them, reps 1% apart within each
    summary = summarise(made_reps(alike(100, 0.002)))
    across = statistics_of(summary, "across gpus", "time")
    assert across["spread_pct"] == pytest.approx(0.2)
    assert across["spread_pct_ci_low"] == 0 and across["spread_pct_ci_high"] > 0.2
    assert across["p_value"] > 0.05
    relative = statistics_of(summary, "gpu 0", "rate_vs_median_gpu")
    assert relative["ci_low"] < 1 < relative["ci_high"]


def test_one_rep_per_gpu_gives_no_interval() -> None:
    summary = summarise(made_reps([np.array([10.0]), np.array([11.0])], runs=1))
    across = statistics_of(summary, "across gpus", "time")
    assert across["spread_pct"] == pytest.approx(10.0)
    assert all(math.isnan(across[name]) for name in ("spread_pct_ci_low", "spread_pct_ci_high", "p_value"))
    relative = statistics_of(summary, "gpu 0", "rate_vs_median_gpu")
    assert math.isnan(relative["ci_low"]) and math.isnan(relative["ci_high"])


def test_energy_measured_once_per_run_is_one_value_per_run() -> None:
    reps = made_reps([np.full(100, 10.0), np.full(100, 11.0)]).assign(gpu=lambda r: r["device"])
    assert [len(sample) for sample in gpu_samples(reps, "energy_per_rep_j")] == [2, 2]
    assert [len(sample) for sample in gpu_samples(reps, "ms")] == [100, 100]


def test_aggregate_variability_needs_its_summary_file(tmp_path: Path) -> None:
    path = _raw_file(tmp_path, 0, 1, [10.0], [False])
    result = run_gpurepro("aggregate", "variability", str(path), "--out", str(tmp_path / "r.csv"))
    assert result.returncode == 2 and "give --summary FILE" in result.stderr


def test_kernel_command_line_and_missing_binary(tmp_path: Path) -> None:
    kernel = KernelSgemm(tmp_path / "sgemm", "tiled", 25536, 100, 2, 1, 7, "sincos")
    assert kernel.command(tmp_path / "o.csv", tmp_path / "d") == [
        str(tmp_path / "sgemm"), "25536", "100", "1", "--impl", "tiled", "--warmup", "2", "--seed", "7",
        "--mode", "sincos", "--data-dir", str(tmp_path / "d"), "--out", str(tmp_path / "o.csv"),
    ]  # fmt: skip
    with pytest.raises(GpureproError, match="does not exist; build it"):
        kernel.timed_reps()


def test_node_jobs_write_each_gpus_raw_files_with_the_start_skew(tmp_path: Path) -> None:
    """The study's node jobs, one a run, as the workflow runs them on a machine with several GPUs (here the
    cpu profile's stand-ins, the same code path): each GPU's raw file where a per-GPU job would have put
    it, every GPU's start in its provenance, and the aggregation reads them all."""
    raw = tmp_path / "raw"
    for run in (1, 2):
        result = run_gpurepro(
            "campaign", "node", "64", "5", "--stand-ins", "2", "--first-run", str(run), "--out-dir", str(raw),
            "--record-prefix", f"torch_run{run}.", "--log-dir", str(tmp_path / "logs" / f"run{run}"),
            "--fail-if-unmeasured", "--sgemm-args", FAST,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    paths = [raw / f"torch_gpu{gpu}_run{run}.csv" for gpu in (0, 1) for run in (1, 2)]
    records = [json.loads((raw / f"torch_run{run}.node.json").read_text()) for run in (1, 2)]
    assert [record["runs"][0]["run"] for record in records] == [1, 2]
    sidecar = json.loads(paths[1].with_suffix(".provenance.json").read_text())["node_job"]
    assert sidecar["start_times"] == records[1]["runs"][0]["start_times"] and sidecar["device"] == "0"
    assert sidecar["start_skew_s"] == pytest.approx(records[1]["runs"][0]["start_skew_s"])
    reps_out, summary_out = tmp_path / "reps.csv", tmp_path / "summary.csv"
    result = run_gpurepro("aggregate", "variability", *map(str, paths), "--out", str(reps_out),
                          "--summary", str(summary_out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    reps = pd.read_csv(reps_out)
    assert reps.groupby(["device", "run"]).size().to_dict() == {(d, r): 5 for d in (0, 1) for r in (1, 2)}
    # each rep carries its run's start skew as the node's record has it (the skew itself is the host's)
    for run, record in zip((1, 2), records, strict=True):
        carried = reps.loc[reps["run"] == run, "start_skew_s"].tolist()
        assert carried == pytest.approx([record["runs"][0]["start_skew_s"]] * 10) and carried[0] >= 0
    scopes = set(pd.read_csv(summary_out)["scope"])
    assert {"gpu 0", "gpu 1", "across gpus"} <= scopes
    drawn = run_gpurepro("plot", "variability", str(reps_out), "--out", str(tmp_path / "variability.png"))
    assert drawn.returncode == 0, drawn.stderr
    # a run measured once is never measured into again: a second job for run 1 is refused
    again = run_gpurepro(
        "campaign", "node", "64", "5", "--stand-ins", "2", "--out-dir", str(raw), "--record-prefix",
        "torch_run1.", "--log-dir", str(tmp_path / "logs" / "again"), "--fail-if-unmeasured",
        "--sgemm-args", FAST,
    )  # fmt: skip
    assert again.returncode != 0 and json.loads((raw / "torch_run1.node.json").read_text()) == records[0]
