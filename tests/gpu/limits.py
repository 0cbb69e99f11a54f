"""The physical limits the single-GPU tier holds measured figures to, written once.

- Ceilings: the datasheet peaks of the GPU present, from its file in config/hardware/ (the one whose
  `nvml_names` match NVML's name for GPU 0, found by gpurepro.hardware), and the power limit NVML
  enforces on it (nvmlDeviceGetEnforcedPowerLimit). No measurement of a working card exceeds them; a
  figure timed on another GPU's stream, a counter read in the wrong unit or a rate divided by the wrong
  count does, by orders of magnitude.
- Floors: fractions of those ceilings below which the figure was not taken on a working GPU of this
  kind (the product fell back to another path, the card idled through the "work", the energy counter
  read nothing). Each says why it is where it is.
- Model figures are bounded through the FLOPs of the model, counted by torch's FlopCounterMode on the
  meta device (shapes only): it counts matrix products, convolutions and attention, a lower bound of
  the work, so the time it takes at peak is a lower bound of any real latency, and peak over it an
  upper bound of any real throughput.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode

from gpurepro import nvml
from gpurepro.hardware import load_hardware, matching

# The GPU every test of the tier measures.
GPU = 0
# A GEMM or copy rate below this share of the datasheet peak was not measured at the sizes the tier
# uses on a working card: the config/hardware files' own measured rates are 0.76x (FP32 GEMM), 0.77x
# (FP16 GEMM) and 0.87x (memory bandwidth) of the datasheet on an H200, and the tiled kernel 0.92x of
# cuBLAS (docs/findings/sgemm.md); FP32 through TF32 or the CPU would be far off either side.
RATE_FLOOR = 0.3
# A model's training throughput below this share of the FP16 peak (as FLOP/s) is not a GPU training:
# stock eager ResNet-18 steps at batch 128, host-paced, ran at 7,300-16,700 samples/s of 0.87 GFLOP each
# on an H100 (docs/findings/hfta.md), 6-15 TFLOP/s of its 989.5: 6 to 15 times above this floor.
MODEL_FLOP_FLOOR = 0.001
# A batch-1 inference of these models took 0.79-11.5 ms on an H100 (docs/findings/inference.md; eager is
# mostly host time); one above this took a path no study measures (the CPU, a recompile per call).
LATENCY_CEILING_MS = 100.0
# The power cap holds the card's average power at its enforced limit; NVML's 1-second average and the
# energy counter's windows may sit a little over it while the controller reacts: 5% over is sampling,
# more is not this card's power.
POWER_MARGIN = 0.05
# A powered GPU draws at least this share of its limit at rest: an H200 idles at about 80 W of its
# 700 W without a CUDA context and about 125 W with one (gpurepro/harness.py), an H100 at a similar
# level; 5% (35 W on both) sits well under any of them, and far above a counter that read nothing.
IDLE_FLOOR = 0.05
# NVML's energy counter updates about every 100 ms (gpurepro/telemetry/energy.py): a window read from
# a sampled trace can gain or lose one update's energy at each edge.
COUNTER_UPDATE_S = 0.1


@dataclass(frozen=True)
class Card:
    """GPU `GPU` as NVML names it, its hardware file's datasheet figures and its enforced power limit."""

    name: str
    hardware_file: str
    peaks: dict[str, float]  # reference -> datasheet value (TFLOP/s, GB/s, W)
    power_limit_w: float  # enforced, read from NVML

    def peak(self, reference: str) -> float:
        return self.peaks[reference]

    def describe(self, reference: str) -> str:
        return f"the {reference} datasheet peak of {self.peak(reference):g} ({self.hardware_file})"

    @property
    def idle_floor_w(self) -> float:
        return IDLE_FLOOR * self.power_limit_w

    @property
    def power_ceiling_w(self) -> float:
        return (1 + POWER_MARGIN) * self.power_limit_w


def card() -> Card | str:
    """The card GPU 0 is, or why its datasheet limits are unknown here."""
    with nvml.session():
        info = nvml.gpu_info(GPU)
    gpu = matching(load_hardware(), (info.name,))
    if gpu is None:
        return f"no config/hardware file names '{info.name}' (nvml_names): its datasheet peaks are unknown"
    peaks = {name: rates.datasheet.value for name, rates in gpu.rates.items() if rates.datasheet}
    missing = {"fp32_gemm", "fp16_gemm", "memory_bandwidth", "power_limit"} - set(peaks)
    if missing:
        return f"config/hardware/{gpu.id}.yaml has no datasheet figure for {', '.join(sorted(missing))}"
    if info.power_limit_enforced_w is None:
        return f"NVML reads no enforced power limit for '{info.name}'"
    return Card(info.name, f"config/hardware/{gpu.id}.yaml", peaks, info.power_limit_enforced_w)


def peak_for(precision: str) -> str:
    """The reference rate bounding work in `precision`: FP16/BF16 autocast runs on the tensor cores (dense
    FP16 peak, which BF16 shares on Hopper); FP32 with TF32 off on the FP32 units."""
    return "fp32_gemm" if precision == "fp32" else "fp16_gemm"


def assert_rate(card: Card, reference: str, values: Sequence[float], what: str) -> None:
    """Every value at or below the datasheet peak, their median at least RATE_FLOOR of it."""
    peak, median = card.peak(reference), float(pd.Series(values).median())
    assert max(values) <= peak, f"{what}: {max(values):.4g} is above {card.describe(reference)}"
    assert median >= RATE_FLOOR * peak, (
        f"{what}: median {median:.4g} is under {RATE_FLOOR} x {card.describe(reference)}"
    )


def assert_energy(card: Card, energy_j: float, seconds: float, what: str) -> None:
    """A window's energy between the idle floor and the power limit over its length, each edge allowed
    one update of the counter."""
    assert math.isfinite(energy_j) and seconds > 0, f"{what}: no energy ({energy_j} J over {seconds} s)"
    slack = 2 * COUNTER_UPDATE_S
    low, high = card.idle_floor_w * max(seconds - slack, 0.0), card.power_ceiling_w * (seconds + slack)
    assert low <= energy_j <= high, (
        f"{what}: {energy_j:.4g} J over {seconds:.3f} s ({energy_j / seconds:.1f} W) is outside "
        f"[{card.idle_floor_w:.0f} W idle floor, {card.power_limit_w:.0f} W enforced limit "
        f"+ {POWER_MARGIN:.0%}] x ({seconds:.3f} -/+ {slack} s)"
    )


def assert_rest_power(card: Card, power_w: float, what: str) -> None:
    """An idle or active-idle baseline: above the idle floor, at or below the limit."""
    assert card.idle_floor_w <= power_w <= card.power_ceiling_w, (
        f"{what}: {power_w:.1f} W is outside [{card.idle_floor_w:.0f}, {card.power_ceiling_w:.0f}] W "
        f"(idle floor, enforced limit {card.power_limit_w:.0f} W + {POWER_MARGIN:.0%})"
    )


def assert_trace_power(card: Card, trace: pd.DataFrame, phases: Sequence[str], what: str) -> None:
    """The samples of a trace taken while the card worked: NVML's 1-second average power at most the
    enforced limit plus the margin, and the median instant reading too (single instant readings may
    spike past the cap for milliseconds, which the cap allows)."""
    working = trace[trace["phase"].isin(phases) & (trace["device"].astype(str) == str(GPU))]
    assert len(working) > 0, f"{what}: no telemetry samples in phases {list(phases)}"
    average = working["power_avg_w"].dropna()
    if len(average):
        assert average.max() <= card.power_ceiling_w, (
            f"{what}: 1-s average power {average.max():.1f} W is above the enforced limit "
            f"{card.power_limit_w:.0f} W + {POWER_MARGIN:.0%}"
        )
    instant = float(working["power_w"].median())
    assert card.idle_floor_w <= instant <= card.power_ceiling_w, (
        f"{what}: median power {instant:.1f} W while working is outside [{card.idle_floor_w:.0f}, "
        f"{card.power_ceiling_w:.0f}] W"
    )


def count_flops(run: Callable[[], object]) -> int:
    """FLOPs `run` performs (matrix products, convolutions, attention), on the meta device."""
    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


def inference_flops(family: str, model: str, batch: int, seq_len: int = 128) -> int:
    """FLOPs of one forward pass of the inference study's model (gpurepro.inference.models)."""
    from gpurepro.inference import models

    if family == "vit":
        built = models.build_vit(model, batch, "meta")
    else:
        built = models.build_bert(model, batch, seq_len, "meta")
    return count_flops(lambda: built.forward(built.example))


def training_flops(model: torch.nn.Module, sample_shape: Sequence[int], classes: int) -> int:
    """FLOPs of one training sample (forward, cross-entropy, backward) of `model`, built on the meta
    device; the optimizer's elementwise update is left out (a lower bound still)."""
    inputs = torch.empty(1, *sample_shape, device="meta")
    targets = torch.zeros(1, dtype=torch.long, device="meta")
    return count_flops(lambda: torch.nn.functional.cross_entropy(model(inputs), targets).backward())


def min_seconds(card: Card, flops: float, precision: str) -> float:
    """The shortest time `flops` can take on this card: all of them at the datasheet peak."""
    return flops / (card.peak(peak_for(precision)) * 1e12)


def max_per_second(card: Card, flops_per_item: float, precision: str) -> float:
    """The most items per second this card can process at `flops_per_item` each."""
    return card.peak(peak_for(precision)) * 1e12 / flops_per_item
