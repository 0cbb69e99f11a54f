"""The fused convolution's matmul form (hfta/ops/conv_forms/matmul.py) on the CPU: it computes the grouped
convolution (values and gradients, float64 gradcheck) for the shapes ResNets use and others, laid out
channels-last or not, with or without an input gradient; a fused array whose convolutions all run as
matmuls trains the same models as separate training."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gpurepro.hfta import workload
from gpurepro.hfta.agreement import compare_training
from gpurepro.hfta.ops.conv_forms import conv2d_as_matmul

B = 3


# (in channels, out channels, kernel, stride, padding, map size) per model: ResNet's stem, 3x3 and
# strided 3x3, strided 1x1 shortcut, a 1x1 that is a view, a 2x2 map, and a non-square one
SHAPES = [
    (3, 4, 7, 2, 3, (11, 11)),
    (4, 5, 3, 1, 1, (5, 5)),
    (4, 5, 3, 2, 1, (5, 5)),
    (4, 5, 1, 2, 0, (4, 4)),
    (4, 5, 1, 1, 0, (3, 3)),
    (5, 4, 3, 1, 1, (2, 2)),
    (2, 3, (3, 1), (1, 2), (1, 0), (4, 5)),
]


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_form_computes_the_grouped_convolution(shape: tuple, channels_last: bool) -> None:
    in_c, out_c, k, stride, padding, size = shape
    k = (k, k) if isinstance(k, int) else k
    layout = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(2, B * in_c, *size, dtype=torch.float64).contiguous(memory_format=layout)
    weight = torch.randn(B * out_c, in_c, *k, dtype=torch.float64).contiguous(memory_format=layout)
    bias = torch.randn(B * out_c, dtype=torch.float64)
    for with_bias in (False, True):
        b = bias if with_bias else None
        torch.testing.assert_close(
            conv2d_as_matmul(x, weight, b, B, stride, padding), F.conv2d(x, weight, b, stride, padding, 1, B)
        )
    inputs = (x.requires_grad_(), weight.requires_grad_(), bias.requires_grad_())
    assert torch.autograd.gradcheck(lambda x, w, b: conv2d_as_matmul(x, w, b, B, stride, padding), inputs)


def test_matmul_form_without_input_gradient() -> None:
    """The stem's input needs no gradient: only the weight's is computed, and it is right."""
    x = torch.randn(2, B * 3, 9, 9, dtype=torch.float64).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(B * 4, 3, 7, 7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w: conv2d_as_matmul(x, w, None, B, 2, 3), (weight,))
    out = conv2d_as_matmul(x, weight, None, B, 2, 3)
    assert out.is_contiguous(memory_format=torch.channels_last)  # the array's layout, kept


@pytest.mark.parametrize("channels_last", [True, False])
def test_matmul_convolutions_train_the_same_models(channels_last: bool) -> None:
    spec = workload("resnet18", image_size=16, num_classes=10)
    agreement = compare_training(
        spec, 2, "sgd", steps=2, batch=4, dtype=torch.float64, channels_last=channels_last, conv_form="matmul"
    )
    assert agreement.failures() == []
