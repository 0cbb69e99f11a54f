"""The GPU tier's bounds (limits.py) without a GPU: each one passes the figures a working H200 gives and
fails the ones a wrong measurement gives, and the FLOP counts they rest on are the models' known ones."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from gpurepro.hardware import load_hardware, matching
from gpurepro.hfta import workload
from gpurepro.training.model import build_model

from . import limits

# The H200 of config/hardware/h200.yaml at its 700 W limit.
H200 = limits.Card(
    "NVIDIA H200",
    "config/hardware/h200.yaml",
    {"fp32_gemm": 67.0, "fp16_gemm": 989.5, "memory_bandwidth": 4800.0, "power_limit": 700.0},
    700.0,
)


def test_the_h200_and_h100_are_in_the_hardware_table_with_every_datasheet_figure() -> None:
    table = load_hardware()
    for name in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"):
        gpu = matching(table, (name,))
        assert gpu is not None, name
        assert {"fp32_gemm", "fp16_gemm", "memory_bandwidth", "power_limit"} <= {
            key for key, rates in gpu.rates.items() if rates.datasheet
        }
    assert matching(table, ("NVIDIA H200 NVL",)) is None  # another card's limits: the tier skips


def test_rates_pass_the_measured_and_fail_above_peak_or_under_the_floor() -> None:
    limits.assert_rate(H200, "fp32_gemm", [50.8, 51.1, 49.9], "measured")
    with pytest.raises(AssertionError, match="above the fp32_gemm datasheet peak of 67"):
        limits.assert_rate(H200, "fp32_gemm", [50.8, 67.5], "one rep above peak")
    with pytest.raises(AssertionError, match="under 0.3 x"):
        limits.assert_rate(H200, "memory_bandwidth", [1000.0, 1200.0], "too slow")


def test_energy_between_idle_floor_and_limit_over_the_window() -> None:
    limits.assert_energy(H200, 600.0 * 1.5, 1.5, "near the cap")
    limits.assert_energy(H200, 80.0 * 1.5, 1.5, "idle")
    with pytest.raises(AssertionError, match="outside"):
        limits.assert_energy(H200, 0.9, 1.5, "read in kJ")
    with pytest.raises(AssertionError, match="outside"):
        limits.assert_energy(H200, 900.0 * 1.5, 1.5, "above the limit")


def test_trace_power_reads_the_working_phases_only() -> None:
    trace = pd.DataFrame(
        {
            "phase": ["idle", "reps", "reps", "energy"],
            "device": ["0", "0", "0", "0"],
            "power_w": [80.0, 650.0, 690.0, 700.0],
            "power_avg_w": [80.0, 640.0, 700.0, 710.0],
        }
    )
    limits.assert_trace_power(H200, trace, ["reps", "energy"], "capped")
    with pytest.raises(AssertionError, match="1-s average power 800.0 W"):
        limits.assert_trace_power(H200, trace.assign(power_avg_w=800.0), ["reps"], "over")
    with pytest.raises(AssertionError, match="no telemetry samples"):
        limits.assert_trace_power(H200, trace, ["active_idle"], "none")


def test_flop_counts_are_the_models_known_ones() -> None:
    """DeiT-T 1.3 GMACs and BERT-B 11 GMACs at 128 tokens a forward pass; ResNet-50 4.1 GMACs a
    forward pass at 224x224, about three times that with the backward pass."""
    assert limits.inference_flops("vit", "deit-t", 1) == pytest.approx(2 * 1.25e9, rel=0.05)
    assert limits.inference_flops("bert", "bert-b", 1, 128) == pytest.approx(2 * 11.2e9, rel=0.05)
    with torch.device("meta"):
        resnet50 = build_model("resnet50", 1000)
    assert limits.training_flops(resnet50, (3, 224, 224), 1000) == pytest.approx(3 * 2 * 4.1e9, rel=0.05)
    spec = workload("resnet18")
    with torch.device("meta"):
        resnet18 = spec.make_model()
    flops = limits.training_flops(resnet18, spec.sample_shape, spec.num_classes)
    # 1.82 GMACs at 224x224, scaled to 64x64 images, forward and backward
    assert flops == pytest.approx(3 * 2 * 1.82e9 * (64 / 224) ** 2, rel=0.05)
    # at the FP16 peak a DeiT-T inference takes at least 2.5 us
    assert limits.min_seconds(H200, 2.5e9, "fp16") == pytest.approx(2.5e9 / 989.5e12)
    assert limits.max_per_second(H200, flops, "fp32") == pytest.approx(67e12 / flops)
