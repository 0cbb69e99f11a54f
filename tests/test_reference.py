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


def _raw_rates(folder: Path, gpu: int, uuid: str, fp32: float) -> Path:
    """A raw rates file of GPU `gpu` as `gpurepro reference` writes it, with its provenance sidecar."""
    raw = folder / f"rates_gpu{gpu}.csv"
    rows = pd.DataFrame(
        [{"profile": "h100", "device": str(gpu), "reference": "fp32_gemm", "rep": rep, "value": fp32 + rep,
          "unit": "TFLOP/s", "n": 8192} for rep in range(3)]
    )  # fmt: skip
    rows.to_csv(raw, index=False)
    gpus = [{"index": gpu, "name": "NVIDIA H100 80GB HBM3", "uuid": uuid}]
    raw.with_name(f"rates_gpu{gpu}.provenance.json").write_text(json.dumps({"profile": "h100", "gpus": gpus}))
    return raw


def test_the_table_holds_each_gpus_rates_by_uuid_and_index(tmp_path: Path) -> None:
    """Under claim-group placement every GPU measures its rates (rates_gpu<g>.csv): one row per GPU and
    rate in tables/reference.csv, each naming its GPU, which the verdict matches to a claim's points."""
    raws = [_raw_rates(tmp_path, 0, "GPU-aaaa", 50.0), _raw_rates(tmp_path, 2, "GPU-cccc", 48.0)]
    table_path = tmp_path / "reference.csv"
    result = run_gpurepro("aggregate", "reference", *map(str, raws), "--out", str(table_path))
    assert result.returncode == 0, result.stderr
    medians = pd.read_csv(table_path).query("statistic == 'median'")
    assert medians[["device", "gpu_uuid", "value", "source_file"]].values.tolist() == [
        [0, "GPU-aaaa", 51.0, "rates_gpu0.csv"],
        [2, "GPU-cccc", 49.0, "rates_gpu2.csv"],
    ]
