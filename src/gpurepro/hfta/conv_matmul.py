"""A merged 2-D convolution as one batched matmul over the B models, and the choice, shape by shape,
between that form and cuDNN's grouped convolution.

The merged strategy (merged.py) runs B models' convolutions as one grouped convolution. cuDNN runs some
shapes of it group by group, slowly. On an H100, at B=32 (ResNet-18, 128 images of 64x64 a model, fp16,
channels-last), forward and backward took, grouped vs as a matmul: 2.2-3.3 vs 1.7-1.8 ms for a layer-4
3x3 convolution on its 2x2 maps, 1.9-2.3 vs 0.5-1.0 ms for its strided 1x1 shortcut, 2.6 vs 1.3 ms for
its strided 3x3; but 0.8 vs 6.2 ms for a layer-1 3x3 on 16x16 maps and 4.8 vs 20 ms for the stem.
The matmul form computes the same convolution on the channels-last layout the array runs in
([N, H, W, B, C] in memory):

    cols[n, y, x, b, (i, j, c)] = padded input[n, y*s + i, x*s + j, b, c]   (k*k strided copies)
    out[n, y, x, b, o]          = sum over (i, j, c) of cols[...] * weight[b, o, i, j, c]   (one bmm)

with the bmm writing straight into the channels-last output; the backward is two bmms and k*k strided
additions. Which form is faster depends on the shape and the GPU (cuDNN wins on the large maps of the
early layers), so `ConvForms("auto")` times both, forward and backward, the first time it meets a shape
on a GPU in cuDNN's benchmark mode, and keeps the faster, as cuDNN's benchmark mode does among its own
algorithms. Elsewhere "auto" is the grouped convolution.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .errors import FusionError

CONV_FORMS = ("auto", "grouped", "matmul")
_TIMED_REPEATS = 3


def _pair(value: Any) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)  # type: ignore[return-value]


def _out_size(size: int, k: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - k) // stride + 1


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
            _out_size(height, k[0], stride[0], padding[0]),
            _out_size(width, k[1], stride[1], padding[1]),
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
            cols = x.new_empty(n, *out_hw, B, k[0] * k[1], in_c)
            for tap, (rows, columns) in enumerate(_taps(k, stride, out_hw)):
                cols[:, :, :, :, tap] = padded[:, rows, columns]
        pixels, depth = n * out_hw[0] * out_hw[1], k[0] * k[1] * in_c
        a = cols.view(pixels, B, depth).transpose(0, 1)  # [B, pixels, depth], rows B*depth apart
        # [B, out_c, (i, j, c)]: a view of a channels-last array's weights; a copy for the rest
        w = weight.view(B, out_c, in_c, *k).permute(0, 1, 3, 4, 2).reshape(B, out_c, depth).to(x.dtype)
        out = x.new_empty(pixels, B, out_c)
        if bias is None:
            torch.bmm(a, w.transpose(1, 2), out=out.transpose(0, 1))
        else:
            b = bias.view(B, 1, out_c).to(x.dtype)
            torch.baddbmm(b, a, w.transpose(1, 2), out=out.transpose(0, 1))
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
            grad_cols = a.new_empty(pixels, B, depth)
            torch.bmm(g, w, out=grad_cols.transpose(0, 1))
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


def _compute_dtype(x: Tensor) -> torch.dtype:
    """The dtype a convolution computes in: autocast's where it is on (as F.conv2d would cast)."""
    kind = x.device.type
    return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype


def conv2d_as_matmul(
    x: Tensor, weight: Tensor, bias: Tensor | None, B: int, stride: Any = 1, padding: Any = 0
) -> Tensor:
    """F.conv2d(x, weight, bias, stride, padding, groups=B) computed as one batched matmul over the B
    groups on the channels-last layout (see the module docstring). Zero padding, no dilation."""
    return _Conv2dAsMatmul.apply(x.to(_compute_dtype(x)), weight, bias, B, _pair(stride), _pair(padding))


def _matmul_applies(weight: Tensor, dilation: Any, groups: int, padding: Any) -> bool:
    """Whether each model's own convolution is ungrouped, undilated, 2-D, with numeric padding (what
    the matmul form computes)."""
    return weight.dim() == 4 and groups == 1 and _pair(dilation) == (1, 1) and not isinstance(padding, str)


def _fwd_bwd_ms(
    run: Callable[[Tensor, Tensor, Tensor | None], Tensor], x: Tensor, weight: Tensor, bias: Tensor | None
) -> float:
    """Mean milliseconds of forward and backward of `run` on random tensors shaped and laid out as the
    real ones (after one untimed call: cuDNN benchmarks its algorithms there); infinity for a form that
    does not fit in the GPU's memory beside the model."""
    inputs = [
        None if t is None else torch.randn_like(t).requires_grad_(t.requires_grad) for t in (x, weight, bias)
    ]
    try:
        with torch.enable_grad():
            out = run(*inputs)
            grad = torch.randn_like(out)
            out.backward(grad)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(_TIMED_REPEATS):
                run(*inputs).backward(grad)
            end.record()
        end.synchronize()
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()
        return math.inf
    return start.elapsed_time(end) / _TIMED_REPEATS


class ConvForms:
    """Which form each merged 2-D convolution runs in: `form` "grouped" (cuDNN's grouped convolution),
    "matmul" (conv2d_as_matmul, where it applies; grouped elsewhere) or "auto": the faster of the two,
    timed once per shape on a GPU in cuDNN's benchmark mode; grouped elsewhere."""

    def __init__(self, form: str = "auto") -> None:
        if form not in CONV_FORMS:
            raise FusionError(f"conv_form must be one of {', '.join(CONV_FORMS)}; got {form!r}")
        self.form = form
        self.chosen: dict[tuple, str] = {}  # shape key -> the form "auto" timed fastest

    def conv2d(
        self,
        conv: Callable,
        B: int,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        stride: Any,
        padding: Any,
        dilation: Any,
        groups: int,
    ) -> Tensor:
        """The merged convolution of B models (weight and bias already [B*O, ...]) in its chosen form."""
        forms: dict[str, Callable[[Tensor, Tensor, Tensor | None], Tensor]] = {
            "grouped": lambda x, w, b: conv(x, w, b, stride, padding, dilation, groups * B),
            "matmul": lambda x, w, b: conv2d_as_matmul(x, w, b, B, stride, padding),
        }
        if self.form == "grouped" or not _matmul_applies(weight, dilation, groups, padding):
            return forms["grouped"](x, weight, bias)
        if self.form != "auto":
            return forms[self.form](x, weight, bias)
        if x.device.type != "cuda" or not torch.backends.cudnn.benchmark:
            return forms["grouped"](x, weight, bias)
        key = (
            tuple(x.shape), x.stride(), x.requires_grad, x.dtype, _compute_dtype(x), x.device,
            tuple(weight.shape), weight.stride(), weight.dtype, bias is None, stride, padding,
        )  # fmt: skip
        if key not in self.chosen:
            times = {name: _fwd_bwd_ms(run, x, weight, bias) for name, run in forms.items()}
            self.chosen[key] = min(times, key=times.__getitem__)
        return forms[self.chosen[key]](x, weight, bias)

    def __repr__(self) -> str:
        return f"ConvForms({self.form!r}, chosen={sorted(set(self.chosen.values()))})"
