"""How long a convolution form takes, forward and backward, on one shape: what ConvForms("auto") compares
to choose a form, and what benchmarks/hfta_conv_forms.py prints for each form of each ResNet-18 shape."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

TIMED_REPEATS = 3

Form = Callable[[Tensor, Tensor, Tensor | None], Tensor]  # (x, weight, bias) -> output


def fwd_bwd_ms(run: Form, x: Tensor, weight: Tensor, bias: Tensor | None) -> float:
    """Mean milliseconds (CUDA events, over TIMED_REPEATS) of forward and backward of `run` on random
    tensors shaped and laid out as the real ones (after one untimed call: cuDNN benchmarks its
    algorithms there, Triton compiles); infinity for a form that does not fit in the GPU's memory beside
    the model."""
    inputs = [
        None if t is None else torch.randn_like(t).requires_grad_(t.requires_grad) for t in (x, weight, bias)
    ]
    try:
        with torch.enable_grad():
            out = run(*inputs)
            grad = torch.randn_like(out)
            out.backward(grad)
            # On x's own stream: an event recorded without one lands on the current GPU, which on a
            # host with every GPU visible need not be x's, and would time nothing.
            stream = torch.cuda.current_stream(x.device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.device(x.device):
                start.record(stream)
                for _ in range(TIMED_REPEATS):
                    run(*inputs).backward(grad)
                end.record(stream)
        end.synchronize()
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()
        return math.inf
    return start.elapsed_time(end) / TIMED_REPEATS
