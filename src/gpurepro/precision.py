"""The arithmetic a measured point runs in, as every study names it: fp32 (true FP32, TF32 off), tf32
(TF32 tensor cores allowed), or fp16/bf16 autocast (AMP). The inference, training and HFTA studies set it
the same way, so a precision means the same thing in each of their tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from .errors import GpureproError

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
# The dtype autocast runs a precision's ops in; fp32 and tf32 run without autocast.
AUTOCAST = {"fp16": torch.float16, "bf16": torch.bfloat16}


def autocast_dtype(precision: str) -> torch.dtype | None:
    """The autocast dtype of a precision, None for fp32/tf32; a clear error for an unknown precision."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return AUTOCAST.get(precision)


def set_matmul_precision(precision: str) -> None:
    """fp32 is true FP32 (TF32 off for matmuls and convolutions); tf32 allows TF32 tensor cores; under
    fp16/bf16 autocast the ops autocast keeps in FP32 stay true FP32."""
    allow = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow


def pick_precision(requested: str | None, profile: Mapping[str, Any]) -> str:
    """The requested precision if the device profile supports it; by default fp16 where it does (the
    published figures' AMP), else fp32."""
    supported = profile["precisions"]
    if requested is None:
        return "fp16" if "fp16" in supported else "fp32"
    if requested not in supported:
        raise GpureproError(
            f"precision {requested} is not supported by profile '{profile['name']}' "
            f"(it supports: {', '.join(supported)})"
        )
    return requested
