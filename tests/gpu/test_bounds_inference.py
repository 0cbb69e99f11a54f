"""`gpurepro infer` at batch 1 under fp16 autocast: DeiT-T in eager, compile and CUDA-graph modes, and
BERT-B at 128 tokens in eager and CUDA-graph modes. Every latency at least the time the model's FLOPs
take at the FP16 datasheet peak (a latency under it was timed on another stream, or divided by the
wrong count of runs) and under LATENCY_CEILING_MS; the energy window, the idle and the active idle
between the idle floor and the enforced power limit; the power while inferring at most that limit."""

from __future__ import annotations

import pytest

from tests.conftest import needs_gpu

from . import limits
from .conftest import GPUREPRO, QUICK, Run

pytestmark = [pytest.mark.gpu, needs_gpu]

PRECISION = "fp16"  # the artifact's AMP, the profiles' default
BERT_SEQ = 128
# (family, model, mode): the DeiT the quick plan measures in the three modes, BERT through the CLI
POINTS = [
    ("vit", "deit-t", "eager"),
    ("vit", "deit-t", "compile"),
    ("vit", "deit-t", "cudagraph"),
    ("bert", "bert-b", "eager"),
    ("bert", "bert-b", "cudagraph"),
]
IDS = [f"{model}-{mode}" for _, model, mode in POINTS]


def _infer(measured, family: str, model: str, mode: str) -> Run:
    command = [*GPUREPRO, "infer", family, "-m", model, *(["-s", str(BERT_SEQ)] if family == "bert" else [])]
    command += ["-b", "1", "--precision", PRECISION, "--mode", mode, "--gpu", str(limits.GPU)]
    # 0.3 s of timed blocks and half a second of active idle: enough blocks for a median
    command += ["--min-run-time", "0.3", "--warmup", "3", "--active-idle-seconds", "0.5", *QUICK]
    return measured(command)


@pytest.mark.parametrize(("family", "model", "mode"), POINTS, ids=IDS)
def test_latency_between_flops_at_peak_and_ceiling(
    card, measured, family: str, model: str, mode: str
) -> None:
    blocks = _infer(measured, family, model, mode).ok()
    flops = limits.inference_flops(family, model, 1, BERT_SEQ)
    floor_ms = limits.min_seconds(card, flops, PRECISION) * 1e3
    fastest, median = float(blocks["ms"].min()), float(blocks["ms"].median())
    assert fastest >= floor_ms, (
        f"{model} {mode}: {fastest:.4g} ms per inference is under {flops / 1e9:.3g} GFLOP at "
        f"{card.describe(limits.peak_for(PRECISION))} TFLOP/s ({floor_ms:.3g} ms)"
    )
    assert median <= limits.LATENCY_CEILING_MS, f"{model} {mode}: median {median:.4g} ms"


@pytest.mark.parametrize(("family", "model", "mode"), POINTS, ids=IDS)
def test_energy_and_rest_power_between_idle_floor_and_limit(
    card, measured, family: str, model: str, mode: str
) -> None:
    run = _infer(measured, family, model, mode)
    run.ok()
    energy, what = run.energy(), f"{model} {mode}"
    assert energy["operations"] > 0
    limits.assert_energy(card, energy["energy_j"], energy["duration_s"], f"{what} energy window")
    limits.assert_rest_power(card, energy["idle_power_w"], f"{what} idle")
    limits.assert_rest_power(card, energy["active_idle_power_w"], f"{what} active idle")


@pytest.mark.parametrize(("family", "model", "mode"), POINTS, ids=IDS)
def test_power_while_inferring_at_most_the_enforced_limit(
    card, measured, family: str, model: str, mode: str
) -> None:
    run = _infer(measured, family, model, mode)
    run.ok()
    assert run.trace is not None
    limits.assert_trace_power(card, run.trace, ["reps", "energy"], f"{model} {mode}")
