"""FusedLinear (hfta/ops/linear.py) computes what B separate linear layers compute, on the merged
[N, B*in] and the model-major [B, N, in] layouts, with and without bias: values and gradients in
float64."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gpurepro.hfta.ops import FusedLinear

from .separate_layers import B, check_against_separate, merge, split


@pytest.mark.parametrize("bias", [True, False])
def test_fused_linear_computes_b_linear_layers_in_both_layouts(bias: bool) -> None:
    torch.manual_seed(0)
    layers = [nn.Linear(5, 4, bias=bias).double() for _ in range(B)]
    inputs = [torch.randn(6, 5, dtype=torch.float64) for _ in range(B)]
    assert isinstance(check_against_separate(layers, inputs, merge, split), FusedLinear)  # merged [N, B*in]
    for layer in layers:
        layer.zero_grad()
    check_against_separate(layers, inputs, lambda x: x, lambda y: y)  # model-major [B, N, in]
