"""A merged 2-D convolution as one batched matmul over the B models.

A fused convolution (ops/conv.py) runs B models' convolutions as one grouped convolution. cuDNN runs some
shapes of it group by group, slowly. On an H100, at B=32 (ResNet-18, 128 images of 64x64 a model, fp16,
channels-last), forward and backward took, grouped vs as a matmul: 2.2-3.3 vs 1.7-1.8 ms for a layer-4
3x3 convolution on its 2x2 maps, 1.9-2.3 vs 0.5-1.0 ms for its strided 1x1 shortcut, 2.6 vs 1.3 ms for
its strided 3x3; but 0.8 vs 6.2 ms for a layer-1 3x3 on 16x16 maps and 4.8 vs 20 ms for the stem.
The matmul form computes the same convolution on the channels-last layout the array runs in
([N, H, W, B, C] in memory):

    cols[n, y, x, b, (i, j, c)] = padded input[n, y*s + i, x*s + j, b, c]   (one strided copy)
    out[n, y, x, b, o]          = sum over (i, j, c) of cols[...] * weight[b, o, i, j, c]   (one bmm)

with the bmm writing straight into the channels-last output; the backward is two bmms and k*k strided
additions. Which form is faster depends on the shape and the GPU (cuDNN wins on the large maps of the
early layers): choice.ConvForms chooses.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .sizes import as_pair, out_size


def _taps(k: tuple[int, int], stride: tuple[int, int], out: tuple[int, int]) -> list[tuple[slice, slice]]:
    """For each kernel tap (i, j), in (i, j) order, the rows and columns of the padded input it reads."""
    return [
        (
            slice(i, i + stride[0] * (out[0] - 1) + 1, stride[0]),
            slice(j, j + stride[1] * (out[1] - 1) + 1, stride[1]),
        )
        for i in range(k[0])
        for j in range(k[1])
    ]


def _bmm_pixels_first(a: Tensor, b: Tensor, bias: Tensor | None = None) -> Tensor:
    """The batched product of a [B, pixels, k] and b [B, k, cols] (plus bias [B, 1, cols]) laid out as
    [pixels, B, cols], the channels-last layout: written there by bmm's out= in eager mode; compiled
    (torch.compile cannot trace out= on a strided view) as a bmm and a copy that inductor may fuse."""
    if torch.compiler.is_compiling():
        product = torch.bmm(a, b) if bias is None else torch.baddbmm(bias, a, b)
        return product.transpose(0, 1).contiguous()
    out = a.new_empty(a.shape[1], a.shape[0], b.shape[2])
    if bias is None:
        torch.bmm(a, b, out=out.transpose(0, 1))
    else:
        torch.baddbmm(bias, a, b, out=out.transpose(0, 1))
    return out


class _Conv2dAsMatmul(torch.autograd.Function):
    """B convolutions as im2col and one bmm. x [N, B*C, H, W]; weight [B*O, C, kh, kw] (any dtype: cast to
    x's); bias [B*O] or None. Output [N, B*O, Ho, Wo], channels-last in memory."""

    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        B: int,
        stride: tuple[int, int],
        padding: tuple[int, int],
    ) -> Tensor:
        n, channels, height, width = x.shape
        in_c, out_c, k = channels // B, weight.shape[0] // B, tuple(weight.shape[2:])
        out_hw = (
            out_size(height, k[0], stride[0], padding[0]),
            out_size(width, k[1], stride[1], padding[1]),
        )
        image = x.permute(0, 2, 3, 1).reshape(n, height, width, B, in_c)  # a view when x is channels-last
        simple = k == (1, 1) and stride == (1, 1) and padding == (0, 0) and image.is_contiguous()
        if simple:
            cols = image.unsqueeze(4)
        else:
            padded = image
            if padding != (0, 0):
                padded = x.new_zeros(n, height + 2 * padding[0], width + 2 * padding[1], B, in_c)
                padded[:, padding[0] : padding[0] + height, padding[1] : padding[1] + width] = image
            # every window of the padded input as a view [n, Ho, Wo, B, kh, kw, C], copied once (unfold,
            # not as_strided: torch.compile traces it without reading the storage offset)
            windows = (
                padded.unfold(1, k[0], stride[0]).unfold(2, k[1], stride[1]).permute(0, 1, 2, 3, 5, 6, 4)
            )
            cols = windows.contiguous().view(n, *out_hw, B, k[0] * k[1], in_c)
        pixels, depth = n * out_hw[0] * out_hw[1], k[0] * k[1] * in_c
        a = cols.view(pixels, B, depth).transpose(0, 1)  # [B, pixels, depth], rows B*depth apart
        # [B, out_c, (i, j, c)]: a view of a channels-last array's weights; a copy for the rest
        w = weight.view(B, out_c, in_c, *k).permute(0, 1, 3, 4, 2).reshape(B, out_c, depth).to(x.dtype)
        out = _bmm_pixels_first(
            a, w.transpose(1, 2), None if bias is None else bias.view(B, 1, out_c).to(x.dtype)
        )
        ctx.save_for_backward(a, w)
        ctx.geometry = (x.shape, weight.shape, weight.dtype, stride, padding, out_hw, simple)
        ctx.bias_dtype = None if bias is None else bias.dtype
        return out.view(n, *out_hw, B * out_c).permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        a, w = ctx.saved_tensors
        x_shape, w_shape, w_dtype, stride, padding, out_hw, simple = ctx.geometry
        n, channels, height, width = x_shape
        B, pixels, depth = a.shape
        out_c, in_c, k = w.shape[1], channels // B, tuple(w_shape[2:])
        g = grad.permute(0, 2, 3, 1).contiguous().view(pixels, B, out_c).transpose(0, 1)  # [B, pixels, out_c]
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[1]:
            gw = torch.bmm(g.transpose(1, 2), a)  # [B, out_c, (i, j, c)]
            grad_w = gw.view(B * out_c, *k, in_c).permute(0, 3, 1, 2).to(w_dtype)
        if ctx.bias_dtype is not None and ctx.needs_input_grad[2]:
            grad_b = g.sum(dim=1).reshape(B * out_c).to(ctx.bias_dtype)
        if ctx.needs_input_grad[0]:
            grad_cols = _bmm_pixels_first(g, w)
            if simple:
                grad_image = grad_cols.view(n, height, width, B, in_c)
            else:
                cols = grad_cols.view(n, *out_hw, B, k[0] * k[1], in_c)
                padded = a.new_zeros(n, height + 2 * padding[0], width + 2 * padding[1], B, in_c)
                for tap, (rows, columns) in enumerate(_taps(k, stride, out_hw)):
                    padded[:, rows, columns] += cols[:, :, :, :, tap]
                grad_image = padded[:, padding[0] : padding[0] + height, padding[1] : padding[1] + width]
            grad_x = grad_image.reshape(n, height, width, channels).permute(0, 3, 1, 2)
        return grad_x, grad_w, grad_b, None, None, None


def compute_dtype(x: Tensor) -> torch.dtype:
    """The dtype a convolution computes in: autocast's where it is on (as F.conv2d would cast)."""
    kind = x.device.type
    return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype


def conv2d_as_matmul(
    x: Tensor, weight: Tensor, bias: Tensor | None, B: int, stride: Any = 1, padding: Any = 0
) -> Tensor:
    """F.conv2d(x, weight, bias, stride, padding, groups=B) computed as one batched matmul over the B
    groups on the channels-last layout (see the module docstring). Zero padding, no dilation."""
    return _Conv2dAsMatmul.apply(x.to(compute_dtype(x)), weight, bias, B, as_pair(stride), as_pair(padding))
