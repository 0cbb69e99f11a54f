"""The reference rates the verdict scales absolute claims by: measured on the CPU here (FP32 and FP16
products, memory bandwidth), written once with provenance, and summarised into tables/reference.csv."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from gpurepro.reference import REFERENCES
from gpurepro.reference.measure import ReferenceSettings, copy_gbs, measure

from .conftest import run_gpurepro


def test_every_rate_is_measured_rep_by_rep_on_the_cpu() -> None:
    rows = measure(
        ReferenceSettings(gemm_n=64, copy_mib=1, reps=3, warmup=1), torch.device("cpu"), None, seed=0
    )
    assert list(rows.groupby("reference", sort=False).size().items()) == [
        ("fp32_gemm", 3),
        ("fp16_gemm", 3),
        ("memory_bandwidth", 3),
    ]  # no power limit without NVML
    assert (rows["value"] > 0).all()
    assert all(
        rows.loc[rows["reference"] == name, "unit"].eq(unit).all() for name, unit in REFERENCES.items()
    )


def test_bandwidth_counts_the_bytes_read_and_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4 MiB copy that takes 1 ms moves 8 MiB: 8.39 GB/s."""
    monkeypatch.setattr("gpurepro.sgemm.torch_mm.timed_call_ms", lambda call, device: (call(), 1.0)[1])
    assert copy_gbs(4, torch.device("cpu"), reps=2, warmup=0) == pytest.approx([8 * 2**20 / 1e-3 / 1e9] * 2)


def test_the_command_writes_raw_rates_once_and_the_table(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "rates.csv"
    args = ["reference", "cpu", "--profile", "cpu", "--gemm-n", "64", "--copy-mib", "1", "--reps", "2"]
    result = run_gpurepro(*args, "--out", str(raw))
    assert result.returncode == 0, result.stderr
    assert "reference rates: fp32_gemm" in result.stderr
    sidecar = json.loads(raw.with_name("rates.provenance.json").read_text())
    assert sidecar["profile"] == "cpu" and sidecar["file"] == "rates.csv"
    again = run_gpurepro(*args, "--out", str(raw))
    assert again.returncode == 2 and "already exists; raw results are never overwritten" in again.stderr
    table_path = tmp_path / "reference.csv"
    assert run_gpurepro("aggregate", "reference", str(raw), "--out", str(table_path)).returncode == 0
    table = pd.read_csv(table_path)
    medians = table[table["statistic"] == "median"]
    assert sorted(medians["metric"]) == ["fp16_gemm", "fp32_gemm", "memory_bandwidth"]
    assert set(table["gpu_name"]) == {"cpu"} and set(table["study"]) == {"reference"}
