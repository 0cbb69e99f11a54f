"""Triton kernel launches that cost the host little: after a kernel's first launch with a given
specialization, its compiled binary is called directly.

Why: a launch through Triton's `kernel[grid](...)` binds every argument, recomputes the kernel's
specialization key and builds launch metadata each time. For the fused convolutions' kernels (about 25
arguments) that made `_LayerConv` and its backward take 9.5 ms of Python a fused ResNet-18 step at B=8
on an H100 host (torch's profiler); launched directly, with the key below, 5.2 ms, and the stock fused
step ran 12.4-12.9 ms where it had run 16.3-17.4 (docs/hfta.md). The direct call is what Triton's own
launch does once the key is known: the compiled kernel's `run` with the grid, the stream, and every
argument, constexprs included.

The key here is what Triton specializes on (each integer argument's value, so its divisibility, and each
tensor's dtype and 16-byte alignment), so a call that Triton would compile anew goes through Triton.
Where the compiled kernel does not have the attributes this relies on (Triton's interpreter, another
Triton version), or a launch hook is set (a profiler's: it reads Triton's launch metadata), every call
goes through Triton. (Triton 3.5 on keeps its hooks as a chain that is never None: one that holds no
call counts as unset.)
"""

from __future__ import annotations

import functools
from typing import Any

import torch

_RUN_ATTRIBUTES = ("run", "function", "packed_metadata")


def _tensor_key(tensors: tuple[torch.Tensor, ...]) -> tuple:
    """What Triton's specialization depends on in `tensors`: each one's dtype and 16-byte alignment, and
    their device."""
    return (tensors[0].get_device(), *[(t.dtype, t.data_ptr() % 16 == 0) for t in tensors])


def _hook_set(hook: Any) -> bool:
    """Whether a launch hook of Triton's knobs is set: a callable, or a HookChain (Triton 3.5 on, never
    None and always truthy) holding at least one call."""
    return hook is not None and bool(getattr(hook, "calls", True))


@functools.cache
def _knobs() -> Any:
    """triton.knobs, None where this Triton has none."""
    try:
        from triton import knobs
    except ImportError:
        return None
    return knobs


def launch_hooks_set() -> bool:
    """Whether Triton has a launch enter or exit hook set (a profiler's), False where knobs is absent."""
    knobs = _knobs()
    if knobs is None:
        return False
    return _hook_set(knobs.runtime.launch_enter_hook) or _hook_set(knobs.runtime.launch_exit_hook)


class CachedLaunch:
    """Launches of one @triton.jit kernel whose parameters are its tensors, then its other arguments,
    then its constexprs."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.compiled: dict[tuple, Any] = {}  # specialization -> compiled kernel, or None: through Triton
        self.direct_launches = 0  # calls that ran the compiled binary directly (the tests read it)

    def __call__(
        self,
        grid: tuple[int, int, int],
        tensors: tuple[torch.Tensor, ...],
        scalars: tuple[int, ...],
        constants: tuple[tuple[str, Any], ...],
        options: tuple[tuple[str, int], ...],
    ) -> None:
        """kernel[grid](*tensors, *scalars, **constants, **options), on the current CUDA stream. The
        scalars, constants and options are tuples, hashed as they are: a caller keeps them per shape,
        so that a call costs the host only the tensors' key (integers are keyed whole: a superset of
        what Triton specializes them on, their divisibility and equality to one)."""
        key = (_tensor_key(tensors), scalars, constants, options)
        compiled = self.compiled.get(key, self)
        if compiled is self:  # not launched with this key yet: Triton compiles (or loads) it
            compiled = self.kernel[grid](*tensors, *scalars, **dict(constants), **dict(options))
            usable = all(hasattr(compiled, name) for name in _RUN_ATTRIBUTES)
            names = getattr(self.kernel, "arg_names", ())
            in_order = list(names[len(tensors) + len(scalars) :]) == [name for name, _ in constants]
            self.compiled[key] = compiled if usable and in_order else None
            return
        if compiled is None or launch_hooks_set():  # a hook (a profiler's) gets Triton's launch metadata
            self.kernel[grid](*tensors, *scalars, **dict(constants), **dict(options))
            return
        stream = torch._C._cuda_getCurrentRawStream(tensors[0].get_device())  # as Triton's launch reads it
        self.direct_launches += 1
        compiled.run(
            *grid, stream, compiled.function, compiled.packed_metadata, None, None, None, *tensors, *scalars,
            *[value for _, value in constants],
        )  # fmt: skip
