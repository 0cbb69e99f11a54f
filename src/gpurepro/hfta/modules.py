"""HFTA's fused modules: each layer of B models as one ordinary module holding the B models' stacked
parameters, so that a fused model is a plain nn.Module (HFTA's own way, github.com/UofT-EcoSystem/hfta,
hfta/ops/).

The B models' activations are one tensor with their channels side by side, [N, B*C, *space] (model b's
channels at b*C to (b+1)*C), and each fused layer computes the B layers at once on it:

- `FusedConv`: weight [B, O, I, *k] viewed as [B*O, I, *k], one grouped convolution with B times the
  groups (each model's convolution its own groups); a 2-D one in the form conv_forms.ConvForms times
  fastest for its shape (grouped, a batched matmul, or Triton's implicit GEMMs);
- `FusedBatchNorm`: one batch norm over the B*C channels, its weight, bias and running statistics the
  stacked per-model ones viewed as [B*C], so each model's statistics are updated in place from its own
  batch;
- `FusedLinear`: one batched matmul, weight [B, out, in]. It takes the merged [N, B*in] (after a
  ResNet's flatten) or the models' own [B, N, in] (an MLP's input, kept model-major through the network:
  no transposes between layers, as HFTA's Linear does);
- ReLU, same-shaped additions, max and adaptive average pooling, dropout and flattening from dim 1 act
  per channel or per element: they stay the architecture's own modules.

`fuse_layers` replaces, in a model holding stacked [B, ...] tensors, each layer by its fused module
holding those same tensors under the same names (so state_dict, the optimizer's parameters and unfusing
see the layers as before). merged.py lists the architectures this applies to.

Why modules and not a torch function mode over the architecture's forward (the earlier way, an op
table applied to every call): a mode puts a Python call on every op and attribute read of the forward,
which on a GPU made a fused ResNet-18 step take twice one model's host time (about 25 ms against 12 on
an H100 host), and torch.compile could not trace it. Fused modules cost the host what one model's
layers cost, and torch.compile traces them whole (tests/test_hfta_modules.py).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .conv_forms import ConvForms
from .errors import FusionError

_CONVOLUTIONS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def per_model(t: Tensor | None) -> Tensor | None:
    """Stacked [B, K, ...] as [B*K, ...]: a view (a batch norm's running statistics updated in place
    reach the stacked buffers; a channels-last array's conv weights stay channels-last)."""
    return None if t is None else t.flatten(0, 1)


def merged_convolution(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    B: int,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
    conv_forms: ConvForms,
) -> Tensor:
    """B convolutions on the merged x [N, B*C, *space], weight [B, O, I, *k], bias [B, O] or None."""
    conv = _CONVOLUTIONS[weight.dim() - 3]
    weight, bias = per_model(weight), per_model(bias)
    if conv is F.conv2d:  # cuDNN's grouped convolution, a batched matmul or Triton, the fastest
        return conv_forms.conv2d(conv, B, x, weight, bias, stride, padding, dilation, groups)
    return conv(x, weight, bias, stride, padding, dilation, groups * B)


def merged_linear(x: Tensor, weight: Tensor, bias: Tensor | None, B: int) -> Tensor:
    """B linear layers: x merged [N, B*in] -> [N, B*out], or model-major [B, N, in] -> [B, N, out];
    weight [B, out, in], bias [B, out] or None."""
    if x.dim() == 3:
        w = weight.transpose(1, 2)  # [B, in, out]
        return torch.bmm(x, w) if bias is None else torch.baddbmm(bias.unsqueeze(1), x, w)
    if x.dim() != 2:
        raise FusionError(f"a merged linear layer takes [N, B*features], got {tuple(x.shape)}")
    n = x.shape[0]
    out = merged_linear(x.reshape(n, B, -1).transpose(0, 1), weight, bias, B)  # [B, N, out]
    return out.transpose(0, 1).reshape(n, -1)


class FusedConv(nn.Module):
    """B convolutions (1-, 2- or 3-D) of one shape: weight [B, O, I, *k], bias [B, O] or None, on the
    merged input [N, B*C, *space]."""

    def __init__(self, conv: nn.modules.conv._ConvNd, B: int, conv_forms: ConvForms) -> None:
        super().__init__()
        if conv.padding_mode != "zeros":
            raise FusionError(f"a fused convolution pads with zeros, not {conv.padding_mode!r}")
        self.B, self.conv_forms = B, conv_forms
        self.stride, self.padding, self.dilation, self.groups = (
            conv.stride, conv.padding, conv.dilation, conv.groups,
        )  # fmt: skip
        self.weight = conv.weight
        self.register_parameter("bias", conv.bias)

    def forward(self, x: Tensor) -> Tensor:
        return merged_convolution(
            x, self.weight, self.bias, self.B, self.stride, self.padding, self.dilation, self.groups,
            self.conv_forms,
        )  # fmt: skip

    def extra_repr(self) -> str:
        shape = tuple(self.weight.shape)
        return f"B={self.B}, weight={shape}, stride={self.stride}, padding={self.padding}"


class FusedBatchNorm(nn.Module):
    """B batch norms (1-, 2- or 3-D) of C channels as one over B*C channels: weight, bias, running_mean,
    running_var [B, C], num_batches_tracked [B]; training and evaluation as nn.BatchNorm's forward (with
    a momentum: merged.py keeps a cumulative average, which reads one step count, out)."""

    def __init__(self, norm: nn.modules.batchnorm._BatchNorm) -> None:
        super().__init__()
        if norm.momentum is None:
            raise FusionError("a fused batch norm needs a momentum (not a cumulative average)")
        self.eps, self.momentum = norm.eps, norm.momentum
        self.track_running_stats = norm.track_running_stats
        self.register_parameter("weight", norm.weight)
        self.register_parameter("bias", norm.bias)
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            self.register_buffer(name, getattr(norm, name))

    def forward(self, x: Tensor) -> Tensor:
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)  # every model's count: all B see a batch each step
        batch_statistics = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats  # running statistics read or updated
        return F.batch_norm(
            x,
            per_model(self.running_mean) if keep else None,
            per_model(self.running_var) if keep else None,
            per_model(self.weight),
            per_model(self.bias),
            batch_statistics,
            self.momentum,
            self.eps,
        )

    def extra_repr(self) -> str:
        return f"B*C={self.running_mean.numel() if self.running_mean is not None else '?'}, eps={self.eps}"


class FusedLinear(nn.Module):
    """B linear layers: weight [B, out, in], bias [B, out] or None; input merged [N, B*in] or
    model-major [B, N, in], output in the same layout."""

    def __init__(self, linear: nn.Linear, B: int) -> None:
        super().__init__()
        self.B = B
        self.weight = linear.weight
        self.register_parameter("bias", linear.bias)

    def forward(self, x: Tensor) -> Tensor:
        return merged_linear(x, self.weight, self.bias, self.B)

    def extra_repr(self) -> str:
        return f"B={self.B}, weight={tuple(self.weight.shape)}"


def _fused_layer(module: nn.Module, B: int, conv_forms: ConvForms) -> nn.Module | None:
    """The fused module standing for `module` (holding its stacked tensors); None for one that stays."""
    fused: nn.Module
    if isinstance(module, nn.modules.conv._ConvNd) and not module.transposed:
        fused = FusedConv(module, B, conv_forms)
    elif isinstance(module, nn.modules.batchnorm._BatchNorm):
        fused = FusedBatchNorm(module)
    elif isinstance(module, nn.Linear):
        fused = FusedLinear(module, B)
    else:
        return None
    fused.training = module.training  # a frozen batch norm stays in eval mode
    return fused


def fuse_layers(stacked: nn.Module, B: int, conv_forms: ConvForms) -> nn.Module:
    """`stacked`, a model holding the B models' stacked [B, ...] tensors, with every convolution, batch
    norm and linear layer replaced by its fused module (in place; the root itself when it is one).
    The architecture's other modules and its forward stay: the caller checks they act per channel
    (merged.why_not_merged)."""
    root = _fused_layer(stacked, B, conv_forms)
    if root is not None:
        return root
    for name, module in list(stacked.named_modules()):
        fused = _fused_layer(module, B, conv_forms) if name else None
        if fused is not None:
            owner, _, leaf = name.rpartition(".")
            setattr(stacked.get_submodule(owner), leaf, fused)
    return stacked
