"""FusedBatchNorm (hfta/ops/batchnorm.py) computes what B separate batch norms compute, in training and
evaluation, each model's running statistics and step count its own: values, gradients and buffers in
float64."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gpurepro.hfta.ops import FusedBatchNorm

from .separate_layers import B, check_against_separate, merge, split


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize(("make", "space"), [(nn.BatchNorm1d, ()), (nn.BatchNorm2d, (3, 4))])
def test_fused_batch_norm_computes_b_batch_norms(make: type, space: tuple, training: bool) -> None:
    torch.manual_seed(0)
    layers = [make(4, momentum=0.3).double().train(training) for _ in range(B)]
    for b, layer in enumerate(layers):  # statistics and affine parameters that differ by model
        layer.running_mean.uniform_(-1, 1)
        layer.running_var.uniform_(0.5, 2)
        nn.init.uniform_(layer.weight, 0.5, 1.5)
        nn.init.uniform_(layer.bias, -1, 1)
        layer.num_batches_tracked.fill_(b)
    inputs = [torch.randn(5, 4, *space, dtype=torch.float64) * (b + 1) + b for b in range(B)]
    fused = check_against_separate(layers, inputs, merge, split)
    assert isinstance(fused, FusedBatchNorm)
    assert fused.num_batches_tracked.tolist() == [b + training for b in range(B)]
