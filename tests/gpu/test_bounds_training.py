"""Training through the CLI on one GPU, each throughput held between MODEL_FLOP_FLOOR of the FP16 peak
and what the FP16 datasheet peak allows at the model's training FLOPs per sample:

- HFTA (`gpurepro hfta`): ResNet-18 at 64x64 in AMP, B=2 models fused into one array, and B=2 processes
  under a private MPS daemon where nvidia-cuda-mps-control exists and starts (skipped, saying why,
  where it does not); with their energy and power between the idle floor and the enforced limit;
- ResNet-50 (`gpurepro train`) in AMP, channels-last, as the ddp study's 1-GPU baseline (one process)
  and as DistributedDataParallel over NCCL with one rank (under torchrun, as its k-GPU points run).

A throughput above peak / FLOPs counts samples that were never trained, or times too short a stretch."""

from __future__ import annotations

import shutil
import sys

import pytest
import torch

from gpurepro.hfta import workload
from gpurepro.hfta_study.mps import MPS_CONTROL
from gpurepro.training.model import build_model
from tests.conftest import needs_gpu

from . import limits
from .conftest import GPUREPRO, QUICK, Run

pytestmark = [pytest.mark.gpu, needs_gpu]

PRECISION = "fp16"
HFTA_B, HFTA_BATCH = 2, 128  # the study's batch per model (config/devices/h200.yaml)
HFTA_MODES = ["hfta", "mps"]
IMAGE_SIZE = 64  # the study's ResNet-18 images (Tiny-ImageNet's shape)
TRAIN_BATCH, TRAIN_IMAGE = 64, 224
LAUNCHERS = ["one-process", "ddp-torchrun"]


def _assert_throughput(card: limits.Card, per_s: float, flops_per_sample: int, what: str) -> None:
    ceiling = limits.max_per_second(card, flops_per_sample, PRECISION)
    floor = limits.MODEL_FLOP_FLOOR * ceiling
    assert floor <= per_s <= ceiling, (
        f"{what}: {per_s:,.1f} samples/s at {flops_per_sample / 1e9:.3g} GFLOP each is outside "
        f"[{floor:,.0f}, {ceiling:,.0f}] ({limits.MODEL_FLOP_FLOOR} x and 1 x "
        f"{card.describe(limits.peak_for(PRECISION))} TFLOP/s)"
    )


def _hfta(measured, mode: str) -> Run:
    if mode == "mps" and shutil.which(MPS_CONTROL) is None:
        pytest.skip(f"{MPS_CONTROL} not found: no MPS daemon can be started here")
    command = [*GPUREPRO, "hfta", "--workload", "resnet18", "--mode", mode, "-B", str(HFTA_B)]
    command += ["--precision", PRECISION, "--batch-size", str(HFTA_BATCH), "--image-size", str(IMAGE_SIZE)]
    # ten timed steps or 1.5 s, whichever is longer: the energy over the training's own span (read from
    # the trace) covers 15 updates of the counter
    command += ["--steps", "10", "--warmup", "3", "--min-timed-s", "1.5", "--gpu", str(limits.GPU), *QUICK]
    run = measured(command)
    status = run.table["status"].iloc[0]
    reason = str(run.table["reason"].iloc[0])
    if mode == "mps" and (status == "skipped" or (status == "failed" and MPS_CONTROL in reason)):
        pytest.skip(f"the MPS daemon could not be started here: {reason}")
    return run


@pytest.mark.parametrize("mode", HFTA_MODES)
def test_hfta_throughput_between_floor_and_fp16_peak(card, measured, mode: str) -> None:
    rows = _hfta(measured, mode).ok()
    spec = workload("resnet18", image_size=IMAGE_SIZE)
    with torch.device("meta"):
        model = spec.make_model()
    flops = limits.training_flops(model, spec.sample_shape, spec.num_classes)
    per_s = float(rows["throughput_samples_per_s"].iloc[0])
    assert per_s == pytest.approx(rows["samples"].sum() / rows["wall_s"].iloc[0])
    assert rows["samples"].sum() >= HFTA_B * HFTA_BATCH * 10  # every model trained its timed steps
    _assert_throughput(card, per_s, flops, f"hfta {mode} B={HFTA_B}")


@pytest.mark.parametrize("mode", HFTA_MODES)
def test_hfta_energy_and_power_between_idle_floor_and_limit(card, measured, mode: str) -> None:
    run = _hfta(measured, mode)
    run.ok()
    energy, what = run.energy(), f"hfta {mode} B={HFTA_B}"
    limits.assert_energy(card, energy["energy_j"], energy["duration_s"], f"{what} energy over the training")
    limits.assert_rest_power(card, energy["idle_power_w"], f"{what} idle")
    assert run.trace is not None
    limits.assert_trace_power(card, run.trace, ["reps"], what)


def _train_command(launcher: str) -> list[str]:
    if launcher == "one-process":
        start = GPUREPRO
    else:  # one rank under torchrun: the process group over NCCL and the DDP wrapper of the k-GPU points
        start = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1"]
        start += ["-m", "gpurepro"]
    return [
        *start, "train", "resnet50", "--gpus", str(limits.GPU), "--precision", PRECISION,
        "--batch-size", str(TRAIN_BATCH), "--image-size", str(TRAIN_IMAGE),
        "--iterations", "20", "--warmup", "5",
    ]  # fmt: skip


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_training_throughput_between_floor_and_fp16_peak(card, measured, launcher: str) -> None:
    run = measured(_train_command(launcher), trace=False)
    rows = run.ok()
    summary = run.sidecar["training"]
    assert summary["world_size"] == 1 and summary["timed_iterations"] == 20
    assert summary["parameters_equal_across_ranks"]
    classes = int(rows["num_classes"].iloc[0])
    with torch.device("meta"):
        model = build_model("resnet50", classes)
    flops = limits.training_flops(model, (3, TRAIN_IMAGE, TRAIN_IMAGE), classes)
    _assert_throughput(card, float(summary["images_per_s"]), flops, f"resnet50 {launcher}")
