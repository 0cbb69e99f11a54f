"""The variability tables: every rep of every GPU in one table, per-GPU medians relative to the median GPU,
and the spread across GPUs (max/min, CV), from raw files written the way jobs write them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gpurepro.errors import GpureproError
from gpurepro.results import write_raw
from gpurepro.sgemm.kernels import KernelSgemm

from .conftest import run_gpurepro


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

    plot = tmp_path / "variability.png"
    drawn = run_gpurepro("plot", "variability", str(reps_out), "--out", str(plot))
    assert drawn.returncode == 0, drawn.stderr
    assert plot.read_bytes()[:4] == b"\x89PNG"


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
