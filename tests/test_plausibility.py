"""The guard against numbers that cannot be: a rate above the GPU's peak or a time below any launch stops
the measuring command before it files anything, and aggregation refuses a table that holds one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpurepro import plausibility
from gpurepro.cli import main
from gpurepro.compare.runs import load_run
from gpurepro.plausibility import ImplausibleMeasurement, check_rate, check_reps, peak
from tests.test_sgemm import FAST, sweep_point

H200 = "NVIDIA H200"


def test_the_peak_is_the_datasheet_of_the_gpu_nvml_names() -> None:
    assert peak("fp32_gemm", "NVIDIA H100 80GB HBM3").value == 67
    assert peak("memory_bandwidth", H200).value == 4800
    assert peak("fp16_gemm", "NVIDIA A100-SXM4-80GB").source == "config/hardware/a100-sxm4-80gb.yaml"
    unknown = peak("fp32_gemm", "NVIDIA B300")
    assert unknown.value == plausibility.GENEROUS_PEAKS["fp32_gemm"] and "generous" in unknown.source


@pytest.mark.parametrize(
    ("reference", "value"),
    [("fp32_gemm", 5.132e4), ("fp16_gemm", 5.262e4), ("memory_bandwidth", 1.217e5)],
)
def test_a_rate_1000x_the_peak_stops_naming_gpu_figure_and_bound(reference: str, value: float) -> None:
    with pytest.raises(ImplausibleMeasurement) as caught:
        check_rate(reference, value, H200, f"GPU 1 reference {reference}")
    message = str(caught.value)
    assert "GPU 1 reference" in message and H200 in message and f"{value:.4g}" in message
    assert f"{peak(reference, H200).value:.4g}" in message and "nothing was filed" in message


def test_a_rate_the_gpu_reaches_passes() -> None:
    check_rate("fp32_gemm", 51.3, H200, "GPU 1 SGEMM")
    check_rate("fp16_gemm", 761.7, H200, "GPU 1 reference")
    check_rate("memory_bandwidth", 4180, H200, "GPU 1 reference")


def test_a_gpu_rep_faster_than_a_launch_stops_but_a_cpu_one_may_be_that_fast() -> None:
    reps = pd.DataFrame({"ms": [0.0012, 21.6], "tflops": [1.0, 50.9]})
    with pytest.raises(ImplausibleMeasurement, match="GPU 1 n 8192 time: 0.0012 ms is below"):
        check_reps(reps, H200, "GPU 1 n 8192")
    check_reps(reps, "cpu", "CPU n 64")


def test_aggregation_refuses_a_raw_file_with_an_impossible_rate(tmp_path: Path) -> None:
    """The SGEMM N=25536 figure GPU 1 read when timed on GPU 0's stream (1.1e7 TFLOP/s): no table."""
    fine = sweep_point(tmp_path, "torch", 8192, np.full(5, 51.0))
    impossible = sweep_point(tmp_path, "torch", 25536, np.full(5, 1.1e7))
    table = tmp_path / "sgemm.csv"
    assert main(["aggregate", "sgemm", fine, "--out", str(table)]) == 0 and table.exists()
    refused = tmp_path / "refused.csv"
    assert main(["aggregate", "sgemm", fine, impossible, "--out", str(refused)]) == 2
    assert not refused.exists()


def test_aggregation_refuses_an_impossible_reference_table(tmp_path: Path) -> None:
    table = pd.DataFrame({
        "gpu_name": [H200] * 3, "metric": ["fp32_gemm", "fp16_gemm", "memory_bandwidth"],
        "statistic": "median", "value": [55024.0, 761.7, 4180.0], "unit": ["TFLOP/s", "TFLOP/s", "GB/s"],
    })  # fmt: skip
    with pytest.raises(ImplausibleMeasurement, match="table reference out: fp32_gemm on NVIDIA H200"):
        plausibility.check_table(table, "reference out")
    plausibility.check_table(table.assign(value=[50.9, 761.7, 4180.0]), "reference out")


def test_the_measuring_command_stops_before_filing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real CPU product held to a bound it exceeds: the command fails, naming it, and files nothing."""
    monkeypatch.setitem(plausibility.GENEROUS_PEAKS, "fp32_gemm", 1e-9)
    raw = tmp_path / "raw"
    trace = raw / "torch_n128.telemetry.csv"
    args = ["sgemm", "128", "3", "cpu", "--out", str(raw / "torch_n128.csv"), "--trace-out", str(trace)]
    assert main([*args, *FAST]) == 2
    assert not raw.exists() or not list(raw.iterdir())


def test_compare_refuses_a_run_whose_table_holds_an_impossible_rate(tmp_path: Path) -> None:
    """A table made before aggregation refused such rates (GPU 1's SGEMM timed on GPU 0's stream)."""
    tables = tmp_path / "h200" / "tables"
    tables.mkdir(parents=True)
    raw = sweep_point(tmp_path, "torch", 8192, np.full(5, 5.5e4))
    pd.read_csv(raw).assign(
        gpu_name=H200, metric="rate", statistic="median", value=5.5e4, unit="TFLOP/s"
    ).to_csv(tables / "sgemm.csv", index=False)
    with pytest.raises(ImplausibleMeasurement, match="sgemm.csv: rate on NVIDIA H200"):
        load_run(tmp_path / "h200")
