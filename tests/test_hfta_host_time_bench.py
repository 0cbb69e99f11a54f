"""benchmarks/hfta_host_time.py off the GPU, and the training settings it varies (layout, conv form)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import torch

from gpurepro.hfta_study.training import TrainSettings, fused_unit, single_unit

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "hfta_host_time.py"
TINY = TrainSettings(
    workload="resnet18", batch_size=2, precision="fp32", steps=1, warmup=1, optimizer="sgd", lr=0.01,
    seed=0, device="cpu", image_size=16,
)  # fmt: skip


def test_the_settings_choose_the_fused_arrays_layout_and_convolution_form() -> None:
    default = fused_unit(TINY, 2).trainer.module
    assert default.channels_last is False and default.conv_forms.form == "auto"  # the study's CPU choice
    forced = fused_unit(replace(TINY, channels_last=True, conv_form="matmul"), 2).trainer.module
    assert forced.channels_last is True and forced.conv_forms.form == "matmul"
    one = single_unit(replace(TINY, channels_last=True), 0)
    conv = one.trainer.module.conv1.weight
    assert conv.is_contiguous(memory_format=torch.channels_last) and not conv.is_contiguous()


def test_the_benchmark_prints_one_model_and_the_fused_array_per_layout_and_form() -> None:
    result = subprocess.run(
        [
            sys.executable, str(SCRIPT), "--device", "cpu", "--b-values", "2", "--batch-size", "2",
            "--image-size", "16", "--steps", "2", "--warmup", "1", "--min-timed-s", "0", "--host-steps", "2",
            "--layouts", "nchw", "channels_last", "--forms", "grouped",
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stdout.splitlines() if ": " in line and "form" in line]
    for layout in ("nchw", "channels_last"):
        assert any(line.startswith(f"{layout}, form grouped: one model: host ") for line in lines), lines
        fused = [line for line in lines if line.startswith(f"{layout}, form grouped: fused B=2: host ")]
        assert len(fused) == 1 and "x one model's)" in fused[0] and "samples/s (" in fused[0], lines
