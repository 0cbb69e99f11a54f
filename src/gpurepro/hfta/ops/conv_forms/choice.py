"""Which form each merged 2-D convolution runs in: ConvForms, the choice FusedConv asks at every call.

Which form is fastest depends on the shape and the GPU, so `ConvForms("auto")` times the forms that
apply, forward and backward (timing.py), the first time it meets a shape on a GPU in cuDNN's benchmark
mode, and keeps the fastest, as cuDNN's benchmark mode does among its own algorithms. Elsewhere "auto"
is grouped. The fused convolutions (ops.conv.FusedConv) call it at every step, so a form is timed for
each shape the fused ops meet; under torch.compile no timing runs (it cannot be traced): a compiled step
takes the form an eager step timed fastest, leaving the Triton kernels out of the graph.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ...errors import FusionError
from .matmul import compute_dtype, conv2d_as_matmul
from .sizes import as_pair
from .timing import Form, fwd_bwd_ms
from .triton import conv2d_implicit_gemm, layer_form_applies, triton_problem

CONV_FORMS = ("auto", "grouped", "matmul", "triton")


def _own_form_applies(weight: Tensor, dilation: Any, groups: int, padding: Any) -> bool:
    """Whether each model's own convolution is ungrouped, undilated, 2-D, with numeric padding (what
    the matmul and Triton forms compute)."""
    return weight.dim() == 4 and groups == 1 and as_pair(dilation) == (1, 1) and not isinstance(padding, str)


class ConvForms:
    """Which form each merged 2-D convolution runs in: `form` "grouped", "matmul" or "triton" (where
    that form applies; grouped elsewhere), or "auto": the fastest that applies, timed once per shape on
    a GPU in cuDNN's benchmark mode; grouped elsewhere. `chosen` maps each timed shape to its form."""

    def __init__(self, form: str = "auto") -> None:
        if form not in CONV_FORMS:
            raise FusionError(f"conv_form must be one of {', '.join(CONV_FORMS)}; got {form!r}")
        self.form = form
        self.chosen: dict[tuple, str] = {}  # shape key -> the form "auto" timed fastest
        self.timings: dict[tuple, dict[str, float]] = {}  # shape key -> ms of each form timed

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
        forms: dict[str, Form] = {
            "grouped": lambda x, w, b: conv(x, w, b, stride, padding, dilation, groups * B),
            "matmul": lambda x, w, b: conv2d_as_matmul(x, w, b, B, stride, padding),
            "triton": lambda x, w, b: conv2d_implicit_gemm(
                x.to(compute_dtype(x)), w, b, B, as_pair(stride), as_pair(padding)
            ),
        }
        if x.requires_grad and not layer_form_applies(weight.shape[1], weight.shape[0] // B):
            del forms["triton"]  # no input gradient for these channel counts (the stem's kernels)
        if self.form == "grouped" or not _own_form_applies(weight, dilation, groups, padding):
            return forms["grouped"](x, weight, bias)
        if self.form != "auto":
            return forms.get(self.form, forms["grouped"])(x, weight, bias)
        if x.device.type != "cuda" or not torch.backends.cudnn.benchmark:
            return forms["grouped"](x, weight, bias)
        key = (
            tuple(x.shape), x.stride(), x.requires_grad, x.dtype, compute_dtype(x), x.device,
            tuple(weight.shape), weight.stride(), weight.dtype, bias is None, stride, padding,
        )  # fmt: skip
        if torch.compiler.is_compiling():
            # Timing cannot be traced: the form an eager step timed fastest for this shape (training's
            # compiled steps run one eager step first), grouped for a shape none timed. The Triton
            # kernels stay out of compiled graphs: the fastest of the other forms instead.
            times = {name: ms for name, ms in self.timings.get(key, {}).items() if name != "triton"}
            return forms[min(times, key=times.__getitem__) if times else "grouped"](x, weight, bias)
        if key not in self.chosen:  # timed once per shape; every later step only looks the form up
            if "triton" in forms and triton_problem(x.device, compute_dtype(x)):
                del forms["triton"]
            times = {name: self._time(name, run, x, weight, bias) for name, run in forms.items()}
            self.timings[key] = times
            self.chosen[key] = min(times, key=times.__getitem__)
        return forms[self.chosen[key]](x, weight, bias)

    @staticmethod
    def _time(name: str, run: Form, x: Tensor, weight: Tensor, bias: Tensor | None) -> float:
        """`fwd_bwd_ms`, where a failing Triton kernel (a GPU or driver its compiler cannot build for)
        says so and counts as infinitely slow: auto then runs a cuDNN or matmul form."""
        try:
            return fwd_bwd_ms(run, x, weight, bias)
        except Exception as error:  # noqa: BLE001 - any compiler or launch failure
            if name != "triton":
                raise
            warnings.warn(
                f"the Triton convolution failed on {tuple(x.shape)}, not used: {error}", stacklevel=3
            )
            return math.inf

    def __repr__(self) -> str:
        return f"ConvForms({self.form!r}, chosen={sorted(set(self.chosen.values()))})"
