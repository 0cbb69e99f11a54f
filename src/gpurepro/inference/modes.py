"""How one inference is run in each mode, at a precision (gpurepro.precision: fp32, tf32, or fp16/bf16
autocast).

- `eager`: the model's forward as the original scripts ran it (one kernel launch per op from Python).
- `compile`: `torch.compile` (TorchInductor, default mode: fused kernels, no CUDA graphs), compiled and
  warmed up before timing, so compilation is never timed.
- `cudagraph`: the eager forward captured once into a CUDA graph (warm-up on a side stream, then
  `torch.cuda.graph`) and replayed on the same static input: one launch per inference.

The gap between eager and cudagraph at batch 1 is the launch overhead the original's numbers carried.

Autocast follows the inference artifact, which timed `model(x)` inside one `torch.cuda.amp.autocast()`
region: its cast cache (on by default) casts each FP32 weight to fp16 on its first use in the region and
reuses that copy after. How a mode does so is its cast protocol, recorded with every point:

- `region_cached` (eager): the harness enters the runner's `region()`, one autocast region with its
  cache, once around the timed blocks and once around the energy window, and the forward runs inside it
  without entering autocast again. A region per call, with the cache off, re-casts every weight on every
  inference (DeiT-B at batch 1 on an H100: 8.80 ms instead of the artifact's 5.00 ms). A call made
  outside the region (the eager reference, the output check) enters a region of its own for that call.
- `cast_before_capture` (cudagraph): the warm-up calls run in an autocast region with its cache, so the
  weights are cast there, before capture; the capture, inside the same region, finds them in the cache,
  so the graph holds no weight casts and a replay casts only the input. The graph reads the cached
  copies, which must outlive it: see `_keep_cast_cache`.
- `compiled` (compile): autocast per call with its cache off, inside the compiled function, as before;
  the casts are part of what Inductor compiles.
- `none`: fp32 and tf32 cast nothing.

A failure of the compiler or of graph capture raises PointFailed (gpurepro.point_failure) with the
reason, so a sweep records the point as failed instead of stopping.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from typing import Any

import torch

from ..point_failure import PointFailed, first_line
from ..precision import autocast_dtype, set_matmul_precision

MODES = ("eager", "compile", "cudagraph")
# The cast protocol of each mode under fp16/bf16 autocast (module docstring); "none" under fp32/tf32.
CAST_PROTOCOLS = {"eager": "region_cached", "cudagraph": "cast_before_capture", "compile": "compiled"}

Forward = Callable[[torch.Tensor], torch.Tensor]
RegionFactory = Callable[[], AbstractContextManager[Any]]


def cast_protocol(mode: str, precision: str) -> str:
    """How weights are cast to the autocast dtype at this mode and precision (module docstring)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return CAST_PROTOCOLS[mode] if autocast_dtype(precision) is not None else "none"


def autocast_region(precision: str, device_type: str) -> RegionFactory:
    """A factory of autocast regions with their cast cache for fp16/bf16 (each region casts a weight once);
    of empty regions for fp32/tf32."""
    dtype = autocast_dtype(precision)
    if dtype is None:
        return nullcontext
    return functools.partial(torch.autocast, device_type, dtype=dtype, cache_enabled=True)


def with_precision(forward: Forward, precision: str, device_type: str) -> Forward:
    """The forward in an autocast region of its own per call, cache off, for fp16/bf16 (the `compiled`
    protocol: torch.compile traces the region with the forward); unchanged for fp32/tf32."""
    dtype = autocast_dtype(precision)
    if dtype is None:
        return forward

    def autocast_forward(x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type, dtype=dtype, cache_enabled=False):
            return forward(x)

    return autocast_forward


class Runner:
    """One inference on a fixed input: call it for the output tensor (for cudagraph, the graph's static
    output, overwritten by each replay). `region()` is what the harness enters around its timed blocks
    and its energy window (harness.Workload.region): one autocast region with its cast cache for eager
    fp16/bf16, an empty one otherwise. `close()` releases what the runner holds (a graph and the cast
    weights it reads); call it, if at all, on the thread that built the runner and outside any autocast
    region. Without it they are held until the process ends, as a measuring job wants."""

    def __init__(
        self,
        call: Callable[[], torch.Tensor],
        protocol: str,
        region: RegionFactory = nullcontext,
        resources: ExitStack | None = None,
    ) -> None:
        self._call: Callable[[], torch.Tensor] | None = call
        self.cast_protocol = protocol
        self._region = region
        self._resources = resources if resources is not None else ExitStack()
        self._open_regions = 0

    @contextmanager
    def region(self) -> Iterator[None]:
        with self._region():
            self._open_regions += 1
            try:
                yield
            finally:
                self._open_regions -= 1

    def __call__(self) -> torch.Tensor:
        if self._call is None:
            raise RuntimeError(f"this {self.cast_protocol} runner is closed: build another one")
        if self._open_regions or self._region is nullcontext:
            return self._call()
        with self.region():  # a call on its own: a region (and cast cache) for this one call
            return self._call()

    def close(self) -> None:
        """Forget the call (so a graph is never replayed again), then release the resources in reverse."""
        if self._call is not None:
            self._call = None
            self._resources.close()


def _no_grad(forward: Forward, x: torch.Tensor) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        with torch.no_grad():
            return forward(x)

    return run


def _compiled(forward: Forward, x: torch.Tensor, warmup: int) -> Callable[[], torch.Tensor]:
    compiled = torch.compile(forward, dynamic=False)
    run = _no_grad(compiled, x)
    try:
        for _ in range(max(warmup, 1)):  # the first call compiles
            run()
    except torch.OutOfMemoryError:
        raise
    except Exception as err:  # the compiler's errors have many types; each one means "cannot compile"
        raise PointFailed(f"torch.compile failed: {type(err).__name__}: {first_line(err)}") from err
    return run


def _keep_cast_cache(resources: ExitStack, device: torch.device) -> None:
    """Keep the autocast cast cache, and so the cast weights a graph captured from it reads, until
    `resources` close.

    torch drops the cache (and frees the cached copies) when the outermost autocast region of a thread
    ends, and only then. So an autocast region that casts nothing (enabled=False) is opened here and held
    open by `resources`: the capture region inside it ends without dropping the cache, no op of the thread
    runs under autocast because of it, and the cached copies stay referenced by the cache, so the caching
    allocator cannot hand their memory to anything else while the graph may be replayed. On close, the
    device is synchronised first (no replay still reading them), then the region ends and the cache goes.
    """
    resources.enter_context(torch.autocast(device.type, enabled=False, cache_enabled=True))
    if device.type == "cuda":
        resources.callback(torch.cuda.synchronize, device)


def _capture(forward: Forward, x: torch.Tensor, warmup: int) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    """Warm up on a side stream (lazy initialisation: cuBLAS handles, workspaces, and the cast cache where
    an autocast region is open), then capture one forward."""
    side = torch.cuda.Stream(device=x.device)
    side.wait_stream(torch.cuda.current_stream(x.device))
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(max(warmup, 1)):
            forward(x)
    torch.cuda.current_stream(x.device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_output = forward(x)
    return graph, static_output


def _cuda_graph(forward: Forward, x: torch.Tensor, precision: str, warmup: int) -> Runner:
    if x.device.type != "cuda":
        raise PointFailed("cudagraph mode replays a CUDA graph: it needs a GPU")
    protocol = cast_protocol("cudagraph", precision)
    resources = ExitStack()
    try:
        if protocol != "none":
            _keep_cast_cache(resources, x.device)
        with autocast_region(precision, x.device.type)():
            graph, static_output = _capture(forward, x, warmup)
    except torch.OutOfMemoryError:
        resources.close()
        raise
    except Exception as err:  # e.g. an op that synchronises with the host during capture
        resources.close()
        raise PointFailed(f"CUDA graph capture failed: {type(err).__name__}: {first_line(err)}") from err

    def replay() -> torch.Tensor:
        graph.replay()
        return static_output

    return Runner(replay, protocol, resources=resources)


def build_runner(forward: Forward, x: torch.Tensor, mode: str, precision: str, warmup: int = 3) -> Runner:
    """A Runner of one inference on `x` in this mode and precision. Compilation and capture happen here,
    with `warmup` untimed calls, so the timed calls see a ready model."""
    protocol = cast_protocol(mode, precision)
    set_matmul_precision(precision)
    if mode == "eager":
        return Runner(_no_grad(forward, x), protocol, autocast_region(precision, x.device.type))
    if mode == "compile":
        return Runner(_compiled(with_precision(forward, precision, x.device.type), x, warmup), protocol)
    return _cuda_graph(forward, x, precision, warmup)
