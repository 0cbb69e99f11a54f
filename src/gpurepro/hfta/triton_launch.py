"""Triton kernel launches that cost the host little: after a kernel's first launch with a given
specialization, its compiled binary is called directly.

Why: a launch through Triton's `kernel[grid](...)` binds every argument and recomputes the kernel's
specialization key each time. For the fused convolutions' kernels (about 25 arguments) that took about
200 us of host time a launch on an H100 host (torch's profiler: `_LayerConv` and its backward, 57 calls
a fused ResNet-18 step, 3.6 and 4.3 ms of self time a step), so a stock fused step cost the host twice
one model's. The direct call is what Triton's own launch does once the key is known: the compiled
kernel's `run` with the grid, the stream, and every argument, constexprs included.

The key here is what Triton specializes on (each integer argument's value, so its divisibility, and each
tensor's dtype and 16-byte alignment), so a call that Triton would compile anew goes through Triton.
Where the compiled kernel does not have the attributes this relies on (Triton's interpreter, another
Triton version), every call goes through Triton.
"""

from __future__ import annotations

from typing import Any

import torch

_RUN_ATTRIBUTES = ("run", "function", "packed_metadata")


def _specialization(args: tuple) -> tuple:
    """What Triton's specialization of `args` depends on (integers whole: a superset of their
    divisibility and equality to one)."""
    return tuple(
        (arg.dtype, arg.data_ptr() % 16 == 0, arg.device) if isinstance(arg, torch.Tensor) else arg
        for arg in args
    )


def _hooks() -> tuple[Any, Any]:
    """Triton's launch enter and exit hooks (a profiler's), None where none is set or knobs is absent."""
    try:
        from triton import knobs
    except ImportError:
        return None, None
    return knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook


class CachedLaunch:
    """Launches of one @triton.jit kernel whose constexpr parameters follow all its others."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.compiled: dict[tuple, Any] = {}  # specialization -> compiled kernel, or None: through Triton

    def __call__(
        self, grid: tuple[int, ...], args: tuple, constants: dict[str, Any], options: dict[str, int]
    ) -> None:
        """kernel[grid](*args, **constants, **options), on the current CUDA stream."""
        key = (_specialization(args), tuple(constants.items()), tuple(options.items()))
        if key not in self.compiled:
            compiled = self.kernel[grid](*args, **constants, **options)
            usable = all(hasattr(compiled, name) for name in _RUN_ATTRIBUTES)
            names = getattr(self.kernel, "arg_names", ())
            in_order = list(names[len(args) :]) == list(constants)  # the constexprs, last and in order
            self.compiled[key] = compiled if usable and in_order else None
            return
        compiled = self.compiled[key]
        if compiled is None or any(_hooks()):  # a hook (a profiler's) gets Triton's launch metadata
            self.kernel[grid](*args, **constants, **options)
            return
        grid3 = (*grid, 1, 1)[:3]
        stream = torch.cuda.current_stream(args[0].device).cuda_stream
        compiled.run(
            *grid3, stream, compiled.function, compiled.packed_metadata, None, None, None, *args,
            *constants.values(),
        )  # fmt: skip
