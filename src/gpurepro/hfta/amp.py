"""Autocast under vmap: put back the casts that vmap's batching rules step around.

vmap's batching rules run before autocast sees an op, and some of them call a different op on the
stacked tensors than the model called. Autocast then no longer recognises the op (measured on torch
2.14, CPU bfloat16; the rules are the same on CUDA):

- convolutions: F.conv2d is batched as aten::convolution, which autocast does not cast, so the grouped
  convolution of a fused ResNet ran in fp32 under AMP (no tensor cores);
- linear layers with a bias: the matmul is cast, but the fp32 bias is added afterwards, so the output
  is fp32 where autocast gives fp16/bf16;
- batch norm with per-model (batched) running statistics fails outright on a half-precision input
  ("expected scalar type BFloat16 but found Float").

`AutocastRepair` is a torch function mode, active only during a fused forward under autocast, that
casts these ops' floating inputs as autocast would (convolution and linear: every floating input to the
autocast dtype) and runs batch norm on an input upcast to its statistics' dtype, returning the input's
dtype (what a single model's batch norm returns). Ops called inside other Python functions
(nn.MultiheadAttention's projections) are out of its reach; encoder.py avoids them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

LOWER_PRECISION = (F.conv1d, F.conv2d, F.conv3d, F.linear)


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    return value


class AutocastRepair(TorchFunctionMode):
    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.dtype = torch.get_autocast_dtype(device_type)

    def __torch_function__(
        self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in LOWER_PRECISION:
            args = tuple(_cast(a, self.dtype) for a in args)
            kwargs = {k: _cast(v, self.dtype) for k, v in kwargs.items()}
        elif func is F.batch_norm:
            return _batch_norm(*args, **kwargs)
        return func(*args, **kwargs)


def _batch_norm(input: torch.Tensor, running_mean: torch.Tensor | None, *args: Any, **kwargs: Any) -> Any:
    if running_mean is None or running_mean.dtype == input.dtype:
        return F.batch_norm(input, running_mean, *args, **kwargs)
    return F.batch_norm(input.to(running_mean.dtype), running_mean, *args, **kwargs).to(input.dtype)


def autocast_repair(device_type: str) -> TorchFunctionMode | None:
    """The repair mode if autocast is on for `device_type`, else None (no per-op cost without AMP)."""
    if torch.is_autocast_enabled(device_type):
        return AutocastRepair(device_type)
    return None
