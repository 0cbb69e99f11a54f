"""FusedConv (hfta/ops/conv.py) computes what B separate convolutions compute, 1-, 2- and 3-D, strided,
without bias, grouped, dilated and 'same'-padded: values and gradients in float64."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

from gpurepro.hfta.ops import FusedConv

from .separate_layers import B, check_against_separate, merge, split


@pytest.mark.parametrize(
    ("make", "space"),
    [
        (lambda: nn.Conv1d(4, 5, 3, stride=2, padding=1), (9,)),
        (lambda: nn.Conv2d(3, 4, 7, stride=2, padding=3, bias=False), (11, 11)),
        (lambda: nn.Conv2d(4, 6, 3, padding="same", dilation=2, groups=2), (6, 7)),
        (lambda: nn.Conv3d(2, 3, 2, stride=(1, 2, 1)), (4, 5, 3)),
    ],
)
def test_fused_convolution_computes_b_convolutions(make: Callable[[], nn.Module], space: tuple) -> None:
    torch.manual_seed(0)
    layers = [make().double() for _ in range(B)]
    inputs = [torch.randn(2, layers[0].in_channels, *space, dtype=torch.float64) for _ in range(B)]
    fused = check_against_separate(layers, inputs, merge, split)
    assert isinstance(fused, FusedConv) and fused.weight.shape[0] == B
