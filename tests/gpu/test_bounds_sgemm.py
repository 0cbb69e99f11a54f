"""`gpurepro sgemm` on every backend (torch.mm with TF32 off, and the cuBLAS and tiled kernels of the
binary built from kernels/ where nvcc is), at two of the profiles' sizes: the rate of every rep at or
below the FP32 datasheet peak and its median above RATE_FLOOR of it, the power while the products run
at or below NVML's enforced limit, and the energy and idle baseline between the idle floor and the limit.

A rate above the peak is a product timed on another stream or counted wrong; an energy under the idle
floor over the window is a counter that read nothing or a window measured in the wrong unit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import needs_gpu

from . import limits
from .conftest import GPUREPRO, QUICK, Run

pytestmark = [pytest.mark.gpu, needs_gpu]

BACKENDS = ["torch", "cublas", "tiled"]
# The smallest size of the H100/H200 profiles' sweep and the quick plan's first (config/devices/h200.yaml):
# 2.7 and 22 ms per product at the measured rates, both on the FP32 plateau of docs/findings/sgemm.md.
SIZES = [4096, 8192]
REPS = 10
POINTS = [(backend, n) for backend in BACKENDS for n in SIZES]


def _sgemm(measured, request: pytest.FixtureRequest, backend: str, n: int) -> Run:
    command = [*GPUREPRO, "sgemm", str(n), str(REPS), str(limits.GPU), "--backend", backend, "--warmup", "2"]
    if backend != "torch":
        if shutil.which("nvcc") is None:
            pytest.skip(f"nvcc not found on PATH: the {backend} backend is the binary built from kernels/")
        binary: Path = request.getfixturevalue("bin_dir") / "sgemm"
        command += ["--binary", str(binary)]
    return measured([*command, *QUICK])


@pytest.mark.parametrize(("backend", "n"), POINTS)
def test_sgemm_rate_between_floor_and_fp32_peak(card, measured, request, backend: str, n: int) -> None:
    reps = _sgemm(measured, request, backend, n).ok()
    assert len(reps) == REPS
    # each rep's rate is its 2 N^3 FLOPs over its time; the time is what a wrong stream would shrink
    assert (reps["tflops"] - 2 * n**3 / (reps["ms"] * 1e-3) / 1e12).abs().max() <= 1e-3 * reps["tflops"].max()
    limits.assert_rate(card, "fp32_gemm", reps["tflops"].tolist(), f"sgemm {backend} N={n}")


@pytest.mark.parametrize(("backend", "n"), POINTS)
def test_sgemm_power_at_most_the_enforced_limit(card, measured, request, backend: str, n: int) -> None:
    run = _sgemm(measured, request, backend, n)
    assert run.trace is not None
    limits.assert_trace_power(card, run.trace, ["reps", "energy"], f"sgemm {backend} N={n}")


@pytest.mark.parametrize(("backend", "n"), POINTS)
def test_sgemm_energy_between_idle_floor_and_limit(card, measured, request, backend: str, n: int) -> None:
    run = _sgemm(measured, request, backend, n)
    energy = run.energy()
    what = f"sgemm {backend} N={n}"
    limits.assert_energy(card, energy["energy_j"], energy["duration_s"], f"{what} energy window")
    limits.assert_rest_power(card, energy["idle_power_w"], f"{what} idle baseline")
    # the window runs products back to back (or spans the binary's reps): it draws more than at rest
    assert energy["avg_power_w"] > energy["idle_power_w"], f"{what}: {energy}"
