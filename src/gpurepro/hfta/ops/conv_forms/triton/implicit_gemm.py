"""The Triton form's entry: a merged 2-D convolution as implicit GEMMs, the layers' kernels where they
apply (layers.py), the stem's for an input that needs no gradient (stem.py)."""

from __future__ import annotations

from torch import Tensor

from ....errors import FusionError
from .availability import triton_problem
from .layers import conv2d_layer, layer_form_applies
from .stem import conv2d_stem


def conv2d_implicit_gemm(
    x: Tensor, weight: Tensor, bias: Tensor | None, B: int, stride: tuple[int, int], padding: tuple[int, int]
) -> Tensor:
    """F.conv2d(x, weight, bias, stride, padding, groups=B) as Triton's implicit GEMM in x's dtype: with
    an input gradient where each model's channels in and out are multiples of 16 (layers.py), else (the
    stem) for an input needing no gradient. Zero padding, no dilation."""
    in_c, out_c = x.shape[1] // B, weight.shape[0] // B
    layer = layer_form_applies(in_c, out_c)
    if x.requires_grad and not layer:
        raise FusionError(
            "the Triton convolution computes an input gradient only for channels in multiples of 16 "
            f"(got {in_c} in, {out_c} out): its input must not require one"
        )
    problem = triton_problem(x.device, x.dtype)
    if problem:
        raise FusionError(f"conv_form='triton' cannot run here: {problem}")
    if layer:
        return conv2d_layer(x, weight, bias, B, stride, padding)
    return conv2d_stem(x, weight, bias, B, stride, padding)
