"""A merged 2-D convolution whose input needs no gradient (a network's first layer, on the data), as an
implicit GEMM in Triton (kernels in stem_kernels.py).

cuDNN runs a merged stem grouped convolution group by group: ResNet-18's 7x7 stride-2 stem on 3-channel
images, B=32 models, 128 images of 64x64 each, fp16, channels-last, took 4.8 ms forward and weight
gradient on an H100, while one dense convolution of the same shape on all B*128 images took 1.8 ms.
Three channels are too few for cuDNN's fast kernels and the per-group launches too small. The implicit
GEMM sees the convolution as what it is per model, a [pixels, k*k*C] x [k*k*C, O] matrix product (196
x 64 for the stem, channels padded to 4), and gathers each row of the left matrix, a pixel's receptive
field, as it multiplies, from the images rearranged once (each model's apart, zero-padded), so no
im2col copy is made. The weight gradient is the same product transposed, summed over pixels in fixed
splits. For the stem above: 2.2 ms forward and weight gradient, 0.26 ms of it the rearranging. Without
an input-gradient kernel it applies only where the input needs no gradient; choice.ConvForms times it
against the other forms there.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..sizes import cdiv, power_of_two
from .layers import LayerGeometry

# Block sizes and launch settings, the fastest of a sweep on an H100 for ResNet-18's stem at B=32 (tl.dot
# needs blocks of powers of two, at least 16)
_FORWARD = {"BLOCK_M": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
_WEIGHT_GRAD = {"BLOCK_M": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
_K_MULTIPLE = 32  # the weights' rows are padded to a multiple of the BLOCK_Ks
_WGRAD_ROWS_PER_SPLIT = 8192  # pixels summed by one weight-gradient block before the fixed-order sum
_APART_BLOCK_P = 64  # pixels per block of the rearranging kernel


def _padded(size: int, block: int) -> int:
    return cdiv(size, block) * block


class _StemGeometry(LayerGeometry):
    """One merged stem convolution's sizes, as the stem's kernels take them."""

    @property
    def padded_hw(self) -> tuple[int, int]:
        return (self.in_hw[0] + 2 * self.padding[0], self.in_hw[1] + 2 * self.padding[1])

    @property
    def cp(self) -> int:  # input channels padded to a power of two: a tap's channels are one aligned load
        return power_of_two(self.in_c)

    @property
    def depth(self) -> int:  # rows of a model's weight matrix: taps times padded input channels
        return self.k[0] * self.k[1] * self.cp

    @property
    def block_n(self) -> int:  # output channels per block: a power of two from 16 to 64
        return min(64, max(16, power_of_two(self.out_c)))

    @property
    def oc_pad(self) -> int:
        return _padded(self.out_c, self.block_n)

    @property
    def k_pad(self) -> int:
        return _padded(self.depth, _K_MULTIPLE)

    def sizes(self) -> tuple[int, ...]:
        """The convolution kernels' size arguments, M to STRIDE_W."""
        return (
            self.out_pixels, self.n, *self.padded_hw, *self.out_hw, self.B, self.k[1], self.depth, self.out_c,
            *self.stride,
        )  # fmt: skip

    def constants(self, settings: dict[str, int]) -> dict[str, int]:
        """A kernel's compile-time constants and launch settings."""
        padding = {"CP": self.cp, "K_PAD": self.k_pad, "OC_PAD": self.oc_pad, "BLOCK_N": self.block_n}
        return padding | settings

    def models_apart(self, x: Tensor) -> Tensor:
        """x [N, B*C, H, W] as [B, N, HP, WP, CP]: each model's images apart, zero-padded by the
        convolution's padding and to CP channels (one Triton kernel: torch's strided copy of
        single channels took 0.6 ms for ResNet-18's stem at B=32 on an H100)."""
        from .stem_kernels import models_apart_kernel

        image = x.permute(0, 2, 3, 1).contiguous()  # [N, H, W, B*C]: no copy for a channels-last x
        apart = x.new_zeros(self.B, self.n, *self.padded_hw, self.cp)
        block_b = min(32, power_of_two(self.B))
        pixels = self.n * self.in_hw[0] * self.in_hw[1]
        grid = (cdiv(pixels, _APART_BLOCK_P), cdiv(self.B, block_b))
        models_apart_kernel[grid](
            image, apart, pixels, self.n, *self.in_hw, self.B, self.in_c,
            *self.padded_hw, *self.padding, CP=self.cp, BLOCK_P=_APART_BLOCK_P, BLOCK_B=block_b,
        )  # fmt: skip
        return apart

    def weight_rows(self, t: Tensor) -> Tensor:
        """The rows of a [B, K_PAD, OC_PAD] weight matrix that hold real taps and channels, as
        [B, kh, kw, CP, OC_PAD] (a view)."""
        return t[:, : self.depth].view(self.B, *self.k, self.cp, self.oc_pad)


class _StemConv(torch.autograd.Function):
    """B convolutions of an input without gradient, of geometry `geo`. x [N, B*C, H, W]; weight
    [B*O, C, kh, kw] and bias [B*O] or None, in x's dtype. Output [N, B*O, Ho, Wo], channels-last."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias: Tensor | None, geo: _StemGeometry) -> Tensor:
        from .stem_kernels import conv_forward_kernel

        B = geo.B
        images = geo.models_apart(x)
        w = x.new_zeros(B, geo.k_pad, geo.oc_pad)
        per_tap = weight.view(B, geo.out_c, geo.in_c, *geo.k).permute(0, 3, 4, 2, 1)  # [B, kh, kw, C, O]
        geo.weight_rows(w)[..., : geo.in_c, : geo.out_c] = per_tap
        out = x.new_empty(geo.out_pixels, B, geo.out_c)
        grid = (B * (geo.oc_pad // geo.block_n), cdiv(geo.out_pixels, _FORWARD["BLOCK_M"]))
        conv_forward_kernel[grid](
            images, w, w if bias is None else bias, out, *geo.sizes(),
            HAS_BIAS=bias is not None, **geo.constants(_FORWARD),
        )  # fmt: skip
        ctx.save_for_backward(images)
        ctx.geometry = geo
        ctx.has_bias = bias is not None
        return out.view(geo.n, *geo.out_hw, B * geo.out_c).permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        from .stem_kernels import conv_weight_grad_kernel

        (images,) = ctx.saved_tensors
        geo: _StemGeometry = ctx.geometry
        g = grad.permute(0, 2, 3, 1).contiguous().view(geo.out_pixels, geo.B, geo.out_c).to(images.dtype)
        grad_w = grad_b = None
        if ctx.needs_input_grad[1]:
            rows = min(_WGRAD_ROWS_PER_SPLIT, _padded(geo.out_pixels, _WEIGHT_GRAD["BLOCK_M"]))
            splits = cdiv(geo.out_pixels, rows)
            parts = images.new_empty(splits, geo.B, geo.k_pad, geo.oc_pad, dtype=torch.float32)
            grid = (geo.B * (geo.oc_pad // geo.block_n), geo.k_pad // _WEIGHT_GRAD["BLOCK_K"], splits)
            conv_weight_grad_kernel[grid](images, g, parts, *geo.sizes(), rows, **geo.constants(_WEIGHT_GRAD))
            per_tap = geo.weight_rows(parts.sum(dim=0))[..., : geo.in_c, : geo.out_c]  # [B, kh, kw, C, O]
            grad_w = per_tap.permute(0, 4, 3, 1, 2).reshape(geo.B * geo.out_c, geo.in_c, *geo.k)
            grad_w = grad_w.to(images.dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = g.sum(dim=0, dtype=torch.float32).reshape(geo.B * geo.out_c).to(images.dtype)
        return None, grad_w, grad_b, None


def conv2d_stem(
    x: Tensor, weight: Tensor, bias: Tensor | None, B: int, stride: tuple[int, int], padding: tuple[int, int]
) -> Tensor:
    """F.conv2d(x, weight, bias, stride, padding, groups=B) in x's dtype for an x needing no gradient
    (the caller checked that Triton runs here). Zero padding, no dilation."""
    n, channels, height, width = x.shape
    in_c, out_c, k = channels // B, weight.shape[0] // B, tuple(weight.shape[2:])
    geo = _StemGeometry(B, n, (height, width), in_c, out_c, k, stride, padding)  # type: ignore[arg-type]
    cast = [None if t is None else t.to(x.dtype) for t in (weight, bias)]
    return _StemConv.apply(x, cast[0], cast[1], geo)
