"""The inference study on a real GPU: CUDA graph replay computes what eager computes (and follows its
static input), autocast stays close to FP32, and the CLI measures energy from NVML's counter."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from gpurepro.inference import models, modes

from .conftest import needs_gpu, run_gpurepro

pytestmark = [pytest.mark.gpu, needs_gpu]


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max() / b.float().abs().max())


@pytest.mark.parametrize(
    ("build", "precision"),
    [
        (lambda: models.build_vit("deit-t", 2, "cuda:0"), "fp32"),
        (lambda: models.build_vit("deit-t", 1, "cuda:0"), "fp16"),
        (lambda: models.build_bert("bert-b", 1, 64, "cuda:0"), "fp16"),
    ],
)
def test_cuda_graph_replay_equals_eager(build, precision: str) -> None:
    model = build()
    eager = modes.build_runner(model.forward, model.example, "eager", precision)
    graph = modes.build_runner(model.forward, model.example, "cudagraph", precision, warmup=2)
    assert _relative(graph(), eager()) < 1e-3
    # the graph reads its static input: change it in place and the replay follows
    if model.example.is_floating_point():
        model.example.mul_(-1.0)
    else:
        model.example.copy_(torch.flip(model.example, dims=[1]))
    expected = eager().clone()
    assert _relative(graph(), expected) < 1e-3


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_autocast_stays_close_to_fp32(precision: str) -> None:
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    model = models.build_vit("deit-s", 1, "cuda:0")
    fp32 = modes.build_runner(model.forward, model.example, "eager", "fp32")().clone()
    amp = modes.build_runner(model.forward, model.example, "eager", precision)()
    assert amp.dtype == modes.AUTOCAST[precision]
    assert _relative(amp, fp32) < 0.05


def test_cli_measures_energy_per_inference_on_the_gpu(tmp_path: Path) -> None:
    out, trace = tmp_path / "deit-t.csv", tmp_path / "deit-t.telemetry.csv"
    result = run_gpurepro(
        "infer", "vit", "-m", "deit-t", "--precision", "fp16", "--mode", "cudagraph", "--gpu", "0",
        "--min-run-time", "0.5", "--idle-seconds", "1", "--energy-window-s", "2",
        "--cooldown-max-wait-s", "5",
        "--device-check", "warn", "--out", str(out), "--trace-out", str(trace),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    blocks = pd.read_csv(out)
    assert set(blocks["status"]) == {"ok"} and (blocks["ms"] > 0).all()
    energy = json.loads((tmp_path / "deit-t.provenance.json").read_text())["measurement"]["energy"]["0"]
    assert energy["method"] == "nvml_energy_counter" and energy["reliable"]
    assert energy["energy_per_op_j"] > energy["energy_per_op_above_idle_j"] > 0
    assert "energy" in set(pd.read_csv(trace)["phase"])
