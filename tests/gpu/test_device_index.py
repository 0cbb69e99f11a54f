"""On a host with several GPUs, every GPU's timings are of that GPU: the reference rates and an SGEMM
measured on GPU 1 and above agree with GPU 0's (all GPUs of one model), where events recorded on the
current device's stream read microseconds for GPU g's work and rates 1000x the peak."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from gpurepro import nvml
from tests.conftest import HAVE_GPU, run_gpurepro

# Identical GPUs of one node differ by a few percent at most (docs/variability.md); a timing on the wrong
# stream is off by orders of magnitude. 10% tells them apart without failing on a slow card.
AGREEMENT = 0.10


def _gpus() -> list[nvml.GpuInfo]:
    if not HAVE_GPU:
        return []
    with nvml.session():
        return [nvml.gpu_info(i) for i in range(nvml.device_count())]


GPUS = _gpus()
pytestmark = pytest.mark.gpu
needs_two_alike = pytest.mark.skipif(
    len(GPUS) < 2 or len({gpu.name for gpu in GPUS}) > 1,
    reason=f"needs two or more GPUs of one model; {len(GPUS)} here",
)


def _reference_rates(gpu: int, folder: Path) -> pd.Series:
    out = folder / f"rates_gpu{gpu}.csv"
    args = ["reference", str(gpu), "--gemm-n", "8192", "--copy-mib", "1024", "--reps", "10"]
    result = run_gpurepro(*args, "--device-check", "warn", "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = pd.read_csv(out)
    return rows[rows["reference"] != "power_limit"].groupby("reference")["value"].median()


@needs_two_alike
def test_reference_rates_of_every_gpu_agree_with_gpu_0(tmp_path: Path) -> None:
    first = _reference_rates(0, tmp_path)
    for gpu in range(1, len(GPUS)):
        ratio = _reference_rates(gpu, tmp_path) / first
        assert ((ratio - 1).abs() < AGREEMENT).all(), f"GPU {gpu} against GPU 0: {ratio.to_dict()}"


def _sgemm_median_ms(gpu: int) -> float:
    args = ["sgemm", "8192", "10", str(gpu), "--backend", "torch", "--device-check", "warn"]
    quick = ["--idle-seconds", "0.5", "--energy-window-s", "2", "--cooldown-max-wait-s", "0"]
    result = run_gpurepro(*args, *quick)
    assert result.returncode == 0, result.stderr
    return float(re.search(r"reps: median ([\d.]+) ms", result.stderr).group(1))


@needs_two_alike
def test_sgemm_on_every_gpu_takes_as_long_as_on_gpu_0() -> None:
    first = _sgemm_median_ms(0)
    for gpu in range(1, len(GPUS)):
        assert abs(_sgemm_median_ms(gpu) / first - 1) < AGREEMENT, f"GPU {gpu}: against {first} ms on GPU 0"
