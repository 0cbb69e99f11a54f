"""The fused convolution: B convolutions (1-, 2- or 3-D) of one shape as one, on the merged input.

The B models' weights [B, O, I, *k] are viewed as [B*O, I, *k] and run as one grouped convolution with
B times the groups (each model's convolution keeps its own groups). A 2-D one runs in the form that
conv_forms.ConvForms times fastest for its shape: cuDNN's grouped convolution, a batched matmul, or
Triton's implicit GEMMs (conv_forms/ says when each wins).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import FusionError
from ..layout import stacked_as_merged
from .conv_forms import ConvForms

_CONVOLUTIONS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


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
        conv = _CONVOLUTIONS[self.weight.dim() - 3]
        weight, bias = stacked_as_merged(self.weight), stacked_as_merged(self.bias)
        if conv is F.conv2d:  # cuDNN's grouped convolution, a batched matmul or Triton, the fastest
            return self.conv_forms.conv2d(
                conv, self.B, x, weight, bias, self.stride, self.padding, self.dilation, self.groups
            )
        return conv(x, weight, bias, self.stride, self.padding, self.dilation, self.groups * self.B)

    def extra_repr(self) -> str:
        shape = tuple(self.weight.shape)
        return f"B={self.B}, weight={shape}, stride={self.stride}, padding={self.padding}"
