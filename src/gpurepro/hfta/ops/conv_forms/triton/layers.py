"""A merged 2-D convolution inside the network (its input needs a gradient) as Triton implicit GEMMs: one
kernel launch for all B models in the forward, one for the input gradient and one for the weight
gradient (kernels in layer_kernels.py).

Why: cuDNN runs a grouped convolution of ResNet-18's shapes group by group, spread over streams. A
stock fused step at B=8 waited on 416-448 events between streams and spent 3.5 ms of host time in
`convolution_backward` against one model's 1.1 ms (H100 hosts, docs/hfta.md), so the fused step cost
the host 1.5-2.8x what one model's step costs, and stock fused training trailed 8 processes under MPS.
Here each convolution of the B models costs the host a fixed handful of launches, whatever B is. (It
did not bring the fused step's host time down to one model's, nor its kernels to cuDNN's dense rate:
docs/hfta.md has the figures; choice.ConvForms keeps this form only where it times fastest.)

The kernels read the merged channels-last activation [N, B*C, H, W] as it lies in memory, [pixels, B,
C], gathering each receptive field as they multiply (no im2col copy, no padded copy), and read the
weights in the parameter's own layout after autocast's cast (a permuted copy of ResNet-18's layer-4
weights took 0.57 ms at B=32 on an H100; reading the float32 parameter in the kernels doubled their
weight traffic, the bulk of a deep layer's: 0.47 against 0.22 ms forward). They need C and OC in
multiples of 16 (tl.dot's smallest block): every ResNet convolution but the stem, whose 3 input channels
stem.py's kernels take.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..sizes import cdiv, out_size, power_of_two
from .launch import CachedLaunch

_MULTIPLE = 16  # channels per block at least (tl.dot's smallest dimension)
_WGRAD_ROWS_PER_SPLIT = 4096  # output pixels one weight-gradient block sums before the fixed-order sum


def channel_block(channels: int, most: int = 64) -> int:
    """A reduction block over `channels`: the largest power of two up to `most` that divides it."""
    return min(most, channels & -channels)


def layer_form_applies(in_c: int, out_c: int) -> bool:
    """Whether the kernels take a convolution of in_c to out_c channels per model."""
    return in_c % _MULTIPLE == 0 and out_c % _MULTIPLE == 0


def _block_n(cols: int) -> int:
    """Columns per block: 128 where there are at least 256, else 64 (16 or 32 for fewer)."""
    return 128 if cols >= 256 else max(_MULTIPLE, min(64, power_of_two(cols)))


_OPTIONS = (("num_warps", 4), ("num_stages", 3))  # the launch options of every kernel here


def _blocks(cols: int, reduce: int) -> dict[str, int]:
    """Block sizes of the forward and input-gradient products (rows: pixels, in blocks of 128; `cols`
    channels out; summed over `reduce` channels a tap), the fastest of a sweep on an H100 over ResNet-18's
    layer-1 and layer-4 convolutions at B=32 (blocks of 64 or 128, 4 or 8 warps, 3 or 4 stages)."""
    return {"BLOCK_M": 128, "BLOCK_N": _block_n(cols), "BLOCK_K": channel_block(reduce)}


def _weight_grad_blocks(out_c: int, in_c: int) -> dict[str, int]:
    """Block sizes of the weight gradient's product: rows the weight's (taps x channels, BLOCK_K at a
    time, up to 128), columns its output channels, summed over output pixels 64 at a time (the same
    sweep's fastest)."""
    return {"BLOCK_M": 64, "BLOCK_N": _block_n(out_c), "BLOCK_K": channel_block(in_c, 128)}


@dataclass(frozen=True, eq=False)
class _Launch:
    """One kernel's launch for one geometry: its grid, the sizes after its tensor arguments, and its
    constexprs (block sizes and flags, in the kernel's order)."""

    grid: tuple[int, int, int]
    sizes: tuple[int, ...]
    constants: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class LayerGeometry:
    """One merged convolution's sizes (stem.py's geometry adds its own)."""

    B: int
    n: int  # images per model
    in_hw: tuple[int, int]
    in_c: int
    out_c: int
    k: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]

    @functools.cached_property
    def out_hw(self) -> tuple[int, int]:
        return tuple(  # type: ignore[return-value]
            out_size(self.in_hw[d], self.k[d], self.stride[d], self.padding[d]) for d in (0, 1)
        )

    @functools.cached_property
    def out_pixels(self) -> int:
        return self.n * self.out_hw[0] * self.out_hw[1]

    @functools.cached_property
    def depth(self) -> int:  # rows of a model's weight matrix: taps times input channels
        return self.k[0] * self.k[1] * self.in_c


@functools.cache
def _launches(geo: LayerGeometry, weight_strides: tuple[int, ...], has_bias: bool) -> dict[str, _Launch]:
    """The forward's, input gradient's and weight gradient's launches for one geometry, weight layout and
    bias, worked out once (each step's launches only look them up: the host's time per call counts)."""
    spatial, steps = (*geo.in_hw, *geo.out_hw), (*geo.stride, *geo.padding)
    forward = _blocks(geo.out_c, geo.in_c)
    input_grad = _blocks(geo.in_c, geo.out_c)
    weight_grad = _weight_grad_blocks(geo.out_c, geo.in_c)
    phase_pixels = geo.n * cdiv(geo.in_hw[0], geo.stride[0]) * cdiv(geo.in_hw[1], geo.stride[1])
    splits = cdiv(geo.out_pixels, _WGRAD_ROWS_PER_SPLIT)
    # The forward's and weight gradient's sizes, M to DEPTH
    sizes = (geo.out_pixels, *spatial, geo.B, geo.in_c, geo.out_c, geo.k[1], *steps, geo.depth)
    return {
        "layer_forward_kernel": _Launch(
            (geo.B * cdiv(geo.out_c, forward["BLOCK_N"]), cdiv(geo.out_pixels, forward["BLOCK_M"]), 1),
            (*sizes, *weight_strides),
            (("HAS_BIAS", has_bias), *forward.items()),
        ),
        "layer_input_grad_kernel": _Launch(
            (
                geo.B * cdiv(geo.in_c, input_grad["BLOCK_N"]),
                cdiv(phase_pixels, input_grad["BLOCK_M"]),
                geo.stride[0] * geo.stride[1],
            ),
            (geo.n, *spatial, geo.B, geo.in_c, geo.out_c, *geo.k, *steps, *weight_strides),
            tuple(input_grad.items()),
        ),
        "layer_weight_grad_kernel": _Launch(
            (geo.B * cdiv(geo.out_c, weight_grad["BLOCK_N"]), geo.depth // weight_grad["BLOCK_K"], splits),
            (*sizes, _WGRAD_ROWS_PER_SPLIT, *weight_strides),
            tuple(weight_grad.items()),
        ),
    }


_KERNELS: dict[str, CachedLaunch] = {}


def _launch(name: str, geo: LayerGeometry, weight: Tensor, tensors: tuple, has_bias: bool = False) -> None:
    """Kernel `name` of layer_kernels on `tensors` for geometry `geo` (weight: the weights'
    layout)."""
    kernel = _KERNELS.get(name)
    if kernel is None:
        from . import layer_kernels

        kernel = _KERNELS[name] = CachedLaunch(getattr(layer_kernels, name))
    launch = _launches(geo, weight.stride(), has_bias)[name]
    kernel(launch.grid, tensors, launch.sizes, launch.constants, _OPTIONS)


def _pixels_first(t: Tensor) -> Tensor:
    """A merged [N, B*C, H, W] as [N, H, W, B*C] contiguous (no copy when t is channels-last)."""
    return t.permute(0, 2, 3, 1).contiguous()


class _LayerConv(torch.autograd.Function):
    """B convolutions of geometry `geo` on x [N, B*C, H, W] in x's dtype; weight [B*OC, C, KH, KW] and
    bias [B*OC] or None in their own dtypes. Output [N, B*OC, HO, WO], channels-last."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias: Tensor | None, geo: LayerGeometry) -> Tensor:
        pixels = _pixels_first(x)
        w = weight.to(x.dtype)  # autocast's cast, in the parameter's layout (the kernels read its strides)
        b = None if bias is None else bias.to(x.dtype)
        out = x.new_empty(geo.out_pixels, geo.B, geo.out_c)
        tensors = (pixels, w, w if b is None else b, out)
        _launch("layer_forward_kernel", geo, w, tensors, has_bias=b is not None)
        ctx.save_for_backward(pixels, w)
        ctx.geometry, ctx.weight_dtype = geo, weight.dtype
        ctx.bias_dtype = None if bias is None else bias.dtype
        return out.view(geo.n, *geo.out_hw, geo.B * geo.out_c).permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        pixels, w = ctx.saved_tensors
        geo: LayerGeometry = ctx.geometry
        g = _pixels_first(grad.to(pixels.dtype))
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            dx = g.new_empty(geo.n, *geo.in_hw, geo.B * geo.in_c)
            _launch("layer_input_grad_kernel", geo, w, (g, w, dx))
            grad_x = dx.permute(0, 3, 1, 2)
        if ctx.needs_input_grad[1]:
            grad_w = _weight_grad(geo, pixels, g, w).to(ctx.weight_dtype)
        if ctx.bias_dtype is not None and ctx.needs_input_grad[2]:
            per_model = g.view(geo.out_pixels, geo.B * geo.out_c)
            grad_b = per_model.sum(dim=0, dtype=torch.float32).to(ctx.bias_dtype)
        return grad_x, grad_w, grad_b, None


def _weight_grad(geo: LayerGeometry, pixels: Tensor, g: Tensor, w: Tensor) -> Tensor:
    """The weight's gradient in float32, laid out as w."""
    splits = cdiv(geo.out_pixels, _WGRAD_ROWS_PER_SPLIT)
    # One part a split, each laid out as the parameter (its strides hold for every part)
    shape, strides = (splits, *w.shape), (w.numel(), *w.stride())
    parts = torch.empty_strided(shape, strides, dtype=torch.float32, device=w.device)
    _launch("layer_weight_grad_kernel", geo, w, (pixels, g, parts))
    return parts[0] if splits == 1 else parts.sum(dim=0)


@functools.cache
def _geometry(
    B: int, x_shape: torch.Size, w_shape: torch.Size, stride: tuple[int, int], padding: tuple[int, int]
) -> LayerGeometry:
    """The geometry of a merged convolution of these shapes, one object per shape (its cached properties
    and the launches keyed by it are worked out once)."""
    n, channels, height, width = x_shape
    k = tuple(w_shape[2:])
    return LayerGeometry(B, n, (height, width), channels // B, w_shape[0] // B, k, stride, padding)  # type: ignore[arg-type]


def conv2d_layer(
    x: Tensor, weight: Tensor, bias: Tensor | None, B: int, stride: tuple[int, int], padding: tuple[int, int]
) -> Tensor:
    """F.conv2d(x, weight, bias, stride, padding, groups=B) in x's dtype (the caller checked
    layer_form_applies and that Triton runs here). Zero padding, no dilation."""
    return _LayerConv.apply(x, weight, bias, _geometry(B, x.shape, weight.shape, stride, padding))
