"""The check each fused op's test runs: the fused op of B torch layers against those layers one by one
(outputs, input and parameter gradients, buffers after the forward), as HFTA's own op tests do."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import Tensor, nn

from gpurepro.hfta.ops import fuse_layers
from gpurepro.hfta.ops.conv_forms import ConvForms

B = 3


def stacked_layers(layers: list[nn.Module]) -> nn.Module:
    """A copy of layer 0 holding the layers' parameters and buffers stacked [B, ...] (as FusedArray
    builds it), its training mode layer 0's."""
    stacked = copy.deepcopy(layers[0])
    for name, _ in layers[0].named_parameters():
        setattr(stacked, name, nn.Parameter(torch.stack([getattr(m, name).detach() for m in layers])))
    for name, _ in layers[0].named_buffers():
        stacked.register_buffer(name, torch.stack([getattr(m, name) for m in layers]))
    return stacked


def check_against_separate(
    layers: list[nn.Module],
    inputs: list[Tensor],
    merge: Callable[[Tensor], Tensor],
    split: Callable[[Tensor], Tensor],
) -> nn.Module:
    """The fused module of `layers` against the layers one by one: outputs, input and parameter
    gradients, and buffers after the forward, in float64."""
    fused = fuse_layers(stacked_layers(layers), B, ConvForms("grouped"))
    x = torch.stack(inputs).requires_grad_()
    out = split(fused(merge(x)))
    grad = torch.randn_like(out)
    out.backward(grad)
    for b, (layer, one) in enumerate(zip(layers, inputs, strict=True)):
        mine = one.clone().requires_grad_()
        expected = layer(mine)
        expected.backward(grad[b])
        torch.testing.assert_close(out[b], expected)
        torch.testing.assert_close(x.grad[b], mine.grad)
        for name, p in layer.named_parameters():
            torch.testing.assert_close(getattr(fused, name).grad[b], p.grad, msg=name)
        for name, t in layer.named_buffers():
            torch.testing.assert_close(getattr(fused, name)[b], t, msg=name)
    return fused


def merge(x: Tensor) -> Tensor:
    """[B, N, C, *space] -> [N, B*C, *space]."""
    return x.transpose(0, 1).flatten(1, 2)


def split(y: Tensor) -> Tensor:
    return y.unflatten(1, (B, -1)).transpose(0, 1)
