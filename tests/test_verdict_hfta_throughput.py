"""The regression check on HFTA's fused array (h100-hfta-fused-b32-throughput): the fused B=32 point's
median throughput over its processes, read exactly on an H100 and scaled datasheet against datasheet on
another GPU; the host-paced serial baseline plays no part in it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gpurepro.hardware import load_hardware
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.points import load_points
from gpurepro.verdict.statuses import EXACT, NOT_MEASURED, OUTSIDE, SCALED, WITHIN

from .conftest import ROOT
from .test_verdict import H100, H200, SCHEMA, reference_table

HARDWARE = load_hardware(ROOT / "config" / "hardware")
CHECK = next(
    claim
    for claim in load_claims([ROOT / "config" / "expected"], SCHEMA, HARDWARE, load_points())
    if claim.id == "h100-hfta-fused-b32-throughput"
)


def _processes(gpu: str, fused: float, serial: float = 9_000.0) -> dict[str, pd.DataFrame]:
    """A made tables/hfta_processes.csv: the fused B=32 point (3 processes, +-2%) beside the points the
    check must not read: serial at B=1, MPS and the graphed fused array at B=32."""
    points = [("hfta", "stock", 32, fused), ("serial", "stock", 1, serial), ("mps", "stock", 32, 80_000.0),
              ("hfta", "graphed", 32, 2 * fused)]  # fmt: skip
    rows = [
        {"gpu_name": gpu, "workload": "resnet18", "precision": "fp16", "mode": mode, "step": step, "b": b,
         "metric": "throughput", "per_process": "value", "statistic": statistic, "value": figure,
         "unit": "samples/s", "runs": "1,2,3",
         "process_values": ",".join(repr(v) for v in (value * 0.99, value, value * 1.01))}
        for mode, step, b, value in points
        for statistic, figure in [("median", value), ("ci_low", value / 1.02), ("ci_high", value * 1.02)]
    ]  # fmt: skip
    return {"hfta_processes": pd.DataFrame(rows)}


def test_on_an_h100_the_fused_arrays_own_rate_is_read_exactly() -> None:
    (held,) = evaluate([CHECK], _processes(H100, 131_000.0), HARDWARE)
    assert held.judged == EXACT and held.result == WITHIN and held.values == (131_000.0,)
    assert held.accepted == pytest.approx((131_900 / 1.05, 131_900 * 1.05))
    assert "from tables/hfta_processes.csv: throughput median where workload=resnet18" in held.detail
    assert held.processes == (3,)
    # the serial baseline moving with the host does not move the check
    (slow_host,) = evaluate([CHECK], _processes(H100, 131_000.0, serial=14_000.0), HARDWARE)
    assert slow_host.result == WITHIN
    (regressed,) = evaluate([CHECK], _processes(H100, 100_000.0), HARDWARE)
    assert regressed.result == OUTSIDE


def test_on_another_gpu_it_is_scaled_measured_against_measured() -> None:
    """The H100's FP16 GEMM and bandwidth are measured (config/hardware/h100-sxm.yaml), so an H200 run's
    own reference rates scale it: sqrt(fp16 here / 737.3 x bandwidth here / 2952), +-11% (5% and the
    scaling's 10% in quadrature), narrow enough that an H100's own rate fails on an H200; without them
    the check is not measured, never scaled by a datasheet."""
    factor = math.sqrt(761.7 / 737.3 * 4178 / 2952)
    rates = reference_table(H200, fp16_gemm=761.7, memory_bandwidth=4178.0)
    (h200,) = evaluate([CHECK], {**_processes(H200, 148_000.0), "reference": rates}, HARDWARE)
    assert h200.judged == SCALED and h200.factor == pytest.approx(factor)
    assert h200.result == WITHIN
    assert h200.status == f"scaled from H100 SXM: {WITHIN} (protocol revised 2026-11-28)"
    assert h200.accepted[0] == pytest.approx(131_900 * factor / (1 + math.hypot(0.05, 0.10)))
    assert "measured against measured" in h200.detail
    (h100_rate,) = evaluate([CHECK], {**_processes(H200, 131_000.0), "reference": rates}, HARDWARE)
    assert h100_rate.result == OUTSIDE  # an H100's rate on an H200
    (no_rates,) = evaluate([CHECK], _processes(H200, 148_000.0), HARDWARE)
    assert no_rates.result == NOT_MEASURED and "measured no fp16_gemm reference rate" in no_rates.detail
    # a GPU with no hardware entry has no rate to scale by: not measured, saying why
    (unknown,) = evaluate([CHECK], _processes("NVIDIA L4", 60_000.0), HARDWARE)
    assert unknown.result == NOT_MEASURED
