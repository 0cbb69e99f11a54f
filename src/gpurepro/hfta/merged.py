"""Which architectures run merged, and the merged layout: B models as one model whose channels are the
B models' channels side by side.

The `merged` strategy of FusedArray. The B models' activations are one tensor [N, B*C, *space] (model
b's channels at b*C to (b+1)*C) and the architecture's own forward runs on it with each convolution,
batch norm and linear layer replaced by its fused module (modules.py: a grouped convolution, a batch
norm over B*C channels, a batched matmul). Every other op of the forward runs as it is, so it must act
per channel or per element: ReLU, addition of same-shaped tensors, max and adaptive average pooling,
dropout and flattening from dim 1. Any other op could mix the models (a reshape, a mean over the
channels, attention), so only architectures made of the modules in MERGEABLE run merged
(`why_not_merged` names the first module that is not); vmap (fused.py) runs the rest.

`MergedOps` is the same op table as a torch function mode: the architecture's own modules, holding
stacked tensors, run merged under it, and it refuses any op outside the table, naming it. It states
which ops the merged layout allows, op by op (tests/test_hfta_fusion.py); FusedArray runs the fused
modules instead, which cost the host no Python call per op (see modules.py).

Why merged at all: it computes what vmap computes, without vmap's cost per op and per step (wrapping
every tensor, functional_call swapping every parameter, the batching rules' layout changes: copies
around max pooling, batch norm's per-model scale and shift in extra passes, in-place ReLU and residual
additions on views that autograd copies back in the backward). On an H100, a fused ResNet-18 training
step (128 images of 64x64 per model, fp16 AMP, cudnn.benchmark) took 86.7 ms under vmap and 41.7 ms
merged at B=32, 49.4 and 16.6 ms at B=8; at B=1 a vmap step took 33 ms, hand-written fused modules 6 ms
(host time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

from .conv_forms import ConvForms
from .errors import FusionError
from .modules import merged_convolution, merged_linear, per_model

# Containers whose forward calls only their submodules, elementwise additions and torch.flatten(x, 1).
MERGEABLE_CONTAINERS = (nn.Sequential, ResNet, BasicBlock, Bottleneck)
MERGEABLE_LAYERS = (
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.Linear,
    nn.ReLU,
    nn.MaxPool2d,
    nn.AdaptiveAvgPool2d,
    nn.Dropout,
    nn.Flatten,
    nn.Identity,
)


def _layer_settings_problem(module: nn.Module) -> str | None:
    """What keeps a listed layer from running merged, if anything."""
    if isinstance(module, nn.modules.conv._ConvNd) and module.padding_mode != "zeros":
        return f"padding_mode={module.padding_mode!r} (only 'zeros' runs merged)"
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.momentum is None:
        return "momentum=None (a cumulative average reads one step count for all models)"
    if isinstance(module, nn.Flatten) and (module.start_dim, module.end_dim) != (1, -1):
        return "flattening other dims than 1 to -1 (it would mix the models)"
    return None


def why_not_merged(model: nn.Module) -> str | None:
    """Why `model` cannot run merged, naming its first module that cannot; None if it can."""
    for name, module in model.named_modules():
        kind = type(module)  # exact types: a subclass may have its own forward
        where = f"module '{name}'" if name else "the model"
        if kind not in MERGEABLE_CONTAINERS + MERGEABLE_LAYERS:
            return f"{where} ({kind.__qualname__}) has no merged form"
        problem = _layer_settings_problem(module)
        if problem:
            return f"{where} ({kind.__qualname__}) has {problem}"
    return None


# Architectures whose activations can stay model-major, [B, N, features], from input to output: linear
# layers take it as it is (one batched matmul), the rest act per element. No transposes to and from the
# merged [N, B*features] around each linear layer.
MODEL_MAJOR = (nn.Sequential, nn.Linear, nn.ReLU, nn.Dropout, nn.Identity)


def runs_model_major(model: nn.Module) -> bool:
    """Whether `model` (mergeable) is made of MODEL_MAJOR modules alone (an MLP)."""
    return all(type(module) in MODEL_MAJOR for module in model.modules())


def merge_models(x: Tensor) -> Tensor:
    """The models' inputs [B, N, C, *space] as one [N, B*C, *space] (a view for a channels-last array's
    arranged images, [N, H, W, B, C] in memory)."""
    x = x.transpose(0, 1)
    return x.reshape(x.shape[0], -1, *x.shape[3:])


def split_models(y: Tensor, B: int) -> Tensor:
    """A merged output [N, B*K, *rest] as the models' outputs [B, N, K, *rest]."""
    return y.reshape(y.shape[0], B, -1, *y.shape[2:]).transpose(0, 1)


def _convolution(
    ops: MergedOps,
    conv: Callable,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    return merged_convolution(input, weight, bias, ops.B, stride, padding, dilation, groups, ops.conv_forms)


def _batch_norm(ops: MergedOps, batch_norm: Callable, input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """F.batch_norm on the merged input, every other tensor (running statistics, weight, bias) stacked
    per model and viewed as [B*C]."""
    args = tuple(per_model(a) if isinstance(a, Tensor) else a for a in args)
    kwargs = {k: per_model(v) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    return batch_norm(input, *args, **kwargs)


def _linear(
    ops: MergedOps, linear: Callable, input: Tensor, weight: Tensor, bias: Tensor | None = None
) -> Tensor:
    if input.dim() != 2:
        raise FusionError(f"a merged linear layer takes [N, B*features], got {tuple(input.shape)}")
    return merged_linear(input, weight, bias, ops.B)


def _elementwise_add(
    ops: MergedOps, add: Callable, input: Tensor, other: Any, *args: Any, **kwargs: Any
) -> Tensor:
    if isinstance(other, Tensor) and other.dim() > 0 and other.shape != input.shape:
        raise FusionError(
            f"a merged addition takes tensors of one shape, got {tuple(input.shape)} and {tuple(other.shape)}"
        )
    return add(input, other, *args, **kwargs)


def _flatten(
    ops: MergedOps, flatten: Callable, input: Tensor, start_dim: int = 0, end_dim: int = -1
) -> Tensor:
    if start_dim != 1 or end_dim not in (-1, input.dim() - 1):
        raise FusionError(f"a merged flatten flattens dims 1 to the last, not {start_dim} to {end_dim}")
    return flatten(input, start_dim, end_dim)


def _as_is(ops: MergedOps, func: Callable, *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


HANDLERS: dict[Callable, Callable] = {
    F.conv1d: _convolution,
    F.conv2d: _convolution,
    F.conv3d: _convolution,
    F.batch_norm: _batch_norm,
    F.linear: _linear,
    Tensor.add_: _elementwise_add,
    Tensor.add: _elementwise_add,
    Tensor.__add__: _elementwise_add,
    Tensor.__iadd__: _elementwise_add,
    torch.add: _elementwise_add,
    torch.flatten: _flatten,
    Tensor.flatten: _flatten,
    **{
        op: _as_is
        for op in (
            F.relu,
            torch.relu,
            torch.relu_,
            Tensor.relu,
            Tensor.relu_,
            F.max_pool2d,
            F.adaptive_avg_pool2d,
            F.dropout,
            Tensor.dim,
        )
    },
}


class MergedOps(TorchFunctionMode):
    """Each op of a forward in its merged form for B models (see the module docstring)."""

    def __init__(self, B: int, conv_forms: ConvForms | None = None) -> None:
        super().__init__()
        self.B = B
        self.conv_forms = conv_forms or ConvForms()

    def __torch_function__(
        self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        handler = HANDLERS.get(func)
        if handler is None and getattr(func, "__name__", None) == "__get__":
            handler = _as_is  # reading an attribute (dtype, shape, ...) computes nothing
        if handler is None:
            name = getattr(func, "__qualname__", repr(func))
            raise FusionError(f"{name} has no merged form (build the array with strategy='vmap')")
        return handler(self, func, *args, **(kwargs or {}))
