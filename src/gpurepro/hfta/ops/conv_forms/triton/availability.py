"""Whether the Triton form can run: Triton importable, a device it compiles for (or its interpreter on
the CPU, TRITON_INTERPRET=1, as the tests run it), and a dtype its kernels compute."""

from __future__ import annotations

import functools
import os

import torch

_GPU_DTYPES = (torch.float16, torch.bfloat16)  # tl.dot would compute fp32 in TF32


def _interpreted() -> bool:
    """Whether Triton runs its kernels in its interpreter (TRITON_INTERPRET=1), on the CPU."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on")


def triton_problem(device: torch.device, dtype: torch.dtype) -> str | None:
    """Why the Triton form cannot run on `device` in `dtype`, or None if it can."""
    return _triton_problem(device.type, dtype, _interpreted())


@functools.cache  # asked at every fused convolution's call: the answer per device kind, dtype and mode
def _triton_problem(device_type: str, dtype: torch.dtype, interpreted: bool) -> str | None:
    try:
        import triton  # noqa: F401
    except ImportError as error:
        return f"Triton is not importable ({error})"
    if device_type == "cpu" and not interpreted:
        return "on the CPU Triton runs only in its interpreter (TRITON_INTERPRET=1)"
    if device_type not in ("cpu", "cuda"):
        return f"Triton does not run on {device_type}"
    if device_type == "cuda" and dtype not in _GPU_DTYPES:
        return f"on a GPU the Triton form computes in float16 or bfloat16, not {dtype}"
    if dtype not in (*_GPU_DTYPES, torch.float32):
        return (
            f"the Triton form accumulates in float32: it computes float16, bfloat16 or float32, not {dtype}"
        )
    return None
