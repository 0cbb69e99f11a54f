"""The ops of a vmap forward that vmap's batching rules get wrong or cannot run, put right.

`VmapRepairs` is a torch function mode, active during every forward of a fused array that runs the
vmap strategy (FusedArray.forward; the merged strategy's fused ops need none), that changes three
things.

Batch norm runs through aten.native_batch_norm, not F.batch_norm. F.batch_norm's dispatch
(aten::_batch_norm_impl_index) asks whether the input is channels-last contiguous to choose cuDNN, and
vmap cannot answer that ("NYI: querying is_contiguous inside of vmap for memory_format other than
torch.contiguous_format", torch 2.11 on CUDA): a channels-last fused ResNet would fail at its first batch
norm. native_batch_norm has its own batching rule (per-model running statistics updated in place, each
from its own model's batch) and the same semantics: F.batch_norm(x, mean, var, w, b, training, momentum,
eps) is native_batch_norm(x, w, b, mean, var, training, momentum, eps)[0].

A global average pooling (adaptive_avg_pool2d to 1x1, ResNet's last pooling) is computed as the mean
over the feature map: on a channels-last batched input, adaptive_avg_pool2d has no batching rule for
the aten::as_strided_ it calls, and vmap falls back to a loop over the models (on an H100 at B=32, a
warning and a slower step).

Under autocast, the casts that vmap's batching rules step around are put back. The rules run before
autocast sees an op, and some of them call a different op on the stacked tensors than the model called,
which autocast no longer recognises (measured on torch 2.14, CPU bfloat16; the rules are the same on
CUDA):

- convolutions: F.conv2d is batched as aten::convolution, which autocast does not cast, so the grouped
  convolution of a fused ResNet ran in fp32 under AMP (no tensor cores);
- linear layers with a bias: the matmul is cast, but the fp32 bias is added afterwards, so the output
  is fp32 where autocast gives fp16/bf16;
- batch norm with per-model (batched) running statistics fails outright on a half-precision input
  ("expected scalar type BFloat16 but found Float").

So convolution and linear get every floating input cast to the autocast dtype, and batch norm an input
upcast to its statistics' dtype, returning the input's dtype (what a single model's batch norm returns).
Ops called inside other Python functions (nn.MultiheadAttention's projections) are out of the mode's
reach; encoder.py avoids them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.overrides import TorchFunctionMode

LOWER_PRECISION = (F.conv1d, F.conv2d, F.conv3d, F.linear)


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, Tensor) and value.is_floating_point():
        return value.to(dtype)
    return value


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """F.batch_norm's signature and result, through aten.native_batch_norm (see the module docstring).

    A half-precision input with float32 statistics (autocast) returns its own dtype, as one model's batch
    norm does. On CUDA the kernel takes it as it is with float32 statistics (its mixed mode), and the
    per-model scale and shift, which vmap's rule applies after the normalisation, are cast to the input's
    dtype. The CPU kernel has no mixed mode under vmap, so there the input is upcast to float32 and the
    result cast back. (On an H100 the two ways measured alike, single runs of a fused ResNet-18 step at
    B=32: fp16 91 ms mixed, 85 ms upcast; bf16 87 and 83 ms.)"""
    dtype = input.dtype
    if running_mean is not None and running_mean.dtype != dtype:
        if input.is_cuda:
            weight, bias = _cast(weight, dtype), _cast(bias, dtype)
        else:
            input = input.to(running_mean.dtype)
    out = torch.ops.aten.native_batch_norm(
        input, weight, bias, running_mean, running_var, training, momentum, eps
    )[0]
    return out.to(dtype)


def _is_global(output_size: Any) -> bool:
    """Whether an adaptive pooling's output size is 1x1 (a mean over the whole feature map)."""
    if isinstance(output_size, int):
        return output_size == 1
    return output_size is not None and tuple(output_size) == (1, 1)


class VmapRepairs(TorchFunctionMode):
    """Batch norm and global average pooling through ops that batch well, and autocast's casts put back
    (see the module docstring), for the forward run under vmap on `device_type`."""

    def __init__(self, device_type: str) -> None:
        super().__init__()
        autocast = torch.is_autocast_enabled(device_type)
        self.dtype = torch.get_autocast_dtype(device_type) if autocast else None

    def __torch_function__(
        self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func is F.batch_norm:
            return batch_norm(*args, **kwargs)
        if func is F.adaptive_avg_pool2d and _is_global(args[1] if len(args) > 1 else kwargs["output_size"]):
            # the same mean, without vmap's slow path: adaptive_avg_pool2d on a channels-last batched
            # input falls back to a loop over the models (no batching rule for aten::as_strided_)
            x = args[0] if args else kwargs["input"]
            return x.mean(dim=(-2, -1), keepdim=True).to(x.dtype)
        if self.dtype is not None and func in LOWER_PRECISION:
            args = tuple(_cast(a, self.dtype) for a in args)
            kwargs = {k: _cast(v, self.dtype) for k, v in kwargs.items()}
        return func(*args, **kwargs)
