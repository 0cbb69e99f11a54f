"""Measuring the reference rates: FP32 and FP16 matrix products and a device-to-device copy, each timed
rep by rep after a warm-up (median over reps), and the power limit NVML enforces."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from .. import nvml
from ..sgemm import torch_mm

BYTES_PER_MIB = 2**20


@dataclass(frozen=True)
class ReferenceSettings:
    """Sizes from the device profile's `reference` section: large enough to reach the GPU's rate."""

    gemm_n: int
    copy_mib: int
    reps: int
    warmup: int = 3


def _rows(reference: str, unit: str, values: list[float], **described: int) -> list[dict]:
    return [
        {"reference": reference, "rep": rep, "value": v, "unit": unit, **described}
        for rep, v in enumerate(values)
    ]


def gemm_tflops(
    n: int, dtype: torch.dtype, device: torch.device, reps: int, warmup: int, seed: int
) -> list[float]:
    """TFLOP/s of each timed N x N product in `dtype` (FP32 with TF32 off, as the SGEMM study)."""
    product = torch_mm.TorchSgemm(n, device, seed, dtype)
    return product.timed_reps(reps, warmup)["tflops"].tolist()


def copy_gbs(mib: int, device: torch.device, reps: int, warmup: int) -> list[float]:
    """GB/s of each copy of `mib` MiB from one buffer to another on the device, counting the bytes read
    and the bytes written, as datasheets count memory bandwidth."""
    source = torch.rand(mib * BYTES_PER_MIB // 4, device=device)
    target = torch.empty_like(source)

    def copy() -> None:
        target.copy_(source)

    for _ in range(warmup):
        copy()
    moved = 2 * source.numel() * source.element_size()
    return [moved / (torch_mm.timed_call_ms(copy, device) * 1e-3) / 1e9 for _ in range(reps)]


def measure(
    settings: ReferenceSettings, device: torch.device, gpu_index: int | None, seed: int
) -> pd.DataFrame:
    """Every reference rate of this device, one row per rep (the power limit once, where NVML reads it)."""
    n, reps, warmup = settings.gemm_n, settings.reps, settings.warmup
    rows = [
        *_rows("fp32_gemm", "TFLOP/s", gemm_tflops(n, torch.float32, device, reps, warmup, seed), n=n),
        *_rows("fp16_gemm", "TFLOP/s", gemm_tflops(n, torch.float16, device, reps, warmup, seed), n=n),
        *_rows(
            "memory_bandwidth",
            "GB/s",
            copy_gbs(settings.copy_mib, device, reps, warmup),
            mib=settings.copy_mib,
        ),
    ]
    if gpu_index is not None:
        with nvml.session():
            limit = nvml.gpu_info(gpu_index).power_limit_enforced_w
        if limit is not None:
            rows += _rows("power_limit", "W", [limit])
    return pd.DataFrame(rows)
