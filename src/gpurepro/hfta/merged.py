"""HFTA's fused operators: B models run as one model whose channels are the B models' channels side by side.

The `merged` strategy of FusedArray. The B models' activations are one tensor [N, B*C, *space] (model
b's channels at b*C to (b+1)*C), their stacked parameters [B, K, ...] are viewed as [B*K, ...], and the
architecture's own forward runs on them, not under vmap, inside `MergedOps`: a torch function mode that
gives each op its merged form.

- convolution: one grouped convolution with B times the groups (each model's convolution is its own
  groups), weight [B*O, I, *kernel]; a 2-D one may instead run as one batched matmul where that is
  faster, or as a Triton implicit GEMM where its input needs no gradient (conv_forms.py);
- batch norm: one batch norm over B*C channels, its weight, bias and running statistics the stacked
  per-model ones viewed as [B*C], so each model's statistics are updated in place from its own batch;
- linear: one batched matmul, the input [N, B*in] viewed as [B, N, in];
- ReLU, addition of same-shaped tensors, max and adaptive average pooling, dropout and flattening from
  dim 1 act per channel or per element: they run as they are.

Any other op could mix the models (a reshape, a mean over the channels, attention), so only
architectures made of the modules in MERGEABLE run merged (`why_not_merged` names the first module that
is not), and the mode refuses any op outside its table, naming it. vmap (fused.py) runs the rest.

Why: it computes what vmap computes, without vmap's cost per op and per step (wrapping every tensor,
functional_call swapping every parameter, the batching rules' layout changes: copies around max pooling,
batch norm's per-model scale and shift in extra passes, in-place ReLU and residual additions on views
that autograd copies back in the backward). On an H100, a fused ResNet-18 training step (128 images of
64x64 per model, fp16 AMP, cudnn.benchmark) took 86.7 ms under vmap and 41.7 ms merged at B=32, 49.4
and 16.6 ms at B=8; at B=1 a vmap step took 33 ms, hand-written fused modules 6 ms (host time).
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


def merge_models(x: Tensor) -> Tensor:
    """The models' inputs [B, N, C, *space] as one [N, B*C, *space] (a view for a channels-last array's
    arranged images, [N, H, W, B, C] in memory)."""
    x = x.transpose(0, 1)
    return x.reshape(x.shape[0], -1, *x.shape[3:])


def split_models(y: Tensor, B: int) -> Tensor:
    """A merged output [N, B*K, *rest] as the models' outputs [B, N, K, *rest]."""
    return y.reshape(y.shape[0], B, -1, *y.shape[2:]).transpose(0, 1)


def _per_model(t: Tensor | None) -> Tensor | None:
    """Stacked [B, K, ...] as [B*K, ...]: a view (a batch norm's running statistics updated in place
    reach the stacked buffers)."""
    return None if t is None else t.flatten(0, 1)


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
    weight, bias = _per_model(weight), _per_model(bias)
    if conv is F.conv2d:  # cuDNN's grouped convolution or a batched matmul, whichever is faster
        return ops.conv_forms.conv2d(conv, ops.B, input, weight, bias, stride, padding, dilation, groups)
    return conv(input, weight, bias, stride, padding, dilation, groups * ops.B)


def _batch_norm(ops: MergedOps, batch_norm: Callable, input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """F.batch_norm on the merged input, every other tensor (running statistics, weight, bias) stacked
    per model and viewed as [B*C]."""
    args = tuple(_per_model(a) if isinstance(a, Tensor) else a for a in args)
    kwargs = {k: _per_model(v) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    return batch_norm(input, *args, **kwargs)


def _linear(
    ops: MergedOps, linear: Callable, input: Tensor, weight: Tensor, bias: Tensor | None = None
) -> Tensor:
    if input.dim() != 2:
        raise FusionError(f"a merged linear layer takes [N, B*features], got {tuple(input.shape)}")
    x = input.reshape(input.shape[0], ops.B, -1).transpose(0, 1)  # [B, N, in]
    w = weight.transpose(1, 2)  # [B, in, out]
    out = torch.bmm(x, w) if bias is None else torch.baddbmm(bias.unsqueeze(1), x, w)
    return out.transpose(0, 1).reshape(input.shape[0], -1)  # [N, B*out]


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
