"""How one inference is run: precision (fp32, tf32, or fp16/bf16 autocast) and mode.

- `eager`: the model's forward as the original scripts ran it (one kernel launch per op from Python).
- `compile`: `torch.compile` (TorchInductor, default mode: fused kernels, no CUDA graphs), compiled and
  warmed up before timing, so compilation is never timed.
- `cudagraph`: the eager forward captured once into a CUDA graph (warm-up on a side stream, then
  `torch.cuda.graph`) and replayed on the same static input: one launch per inference.

The gap between eager and cudagraph at batch 1 is the launch overhead the original's numbers carried.
Autocast runs with `cache_enabled=False`, which CUDA graph capture requires; with one forward per
autocast region the cast cache would save nothing anyway, so all modes do the same casts.

A failure of the compiler or of graph capture raises PointFailed with the reason, so a sweep records
the point as failed instead of stopping.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
AUTOCAST = {"fp16": torch.float16, "bf16": torch.bfloat16}
MODES = ("eager", "compile", "cudagraph")

Forward = Callable[[torch.Tensor], torch.Tensor]


class PointFailed(Exception):
    """This point (model, shape, precision, mode) cannot be measured here; the message says why."""


def set_matmul_precision(precision: str) -> None:
    """fp32 is true FP32 (TF32 off for matmuls and convolutions); tf32 allows TF32 tensor cores; under
    fp16/bf16 autocast the ops autocast keeps in FP32 stay true FP32."""
    allow = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow


def with_precision(forward: Forward, precision: str, device_type: str) -> Forward:
    """The forward under autocast for fp16/bf16; unchanged for fp32/tf32."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    dtype = AUTOCAST.get(precision)
    if dtype is None:
        return forward

    def autocast_forward(x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type, dtype=dtype, cache_enabled=False):
            return forward(x)

    return autocast_forward


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
        raise PointFailed(f"torch.compile failed: {type(err).__name__}: {_first_line(err)}") from err
    return run


def _cuda_graph(forward: Forward, x: torch.Tensor, warmup: int) -> Callable[[], torch.Tensor]:
    if x.device.type != "cuda":
        raise PointFailed("cudagraph mode replays a CUDA graph: it needs a GPU")
    try:
        side = torch.cuda.Stream(device=x.device)
        side.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(max(warmup, 1)):  # lazy initialisation (cuBLAS handles, workspaces) first
                forward(x)
        torch.cuda.current_stream(x.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            static_output = forward(x)
    except torch.OutOfMemoryError:
        raise
    except Exception as err:  # e.g. an op that synchronises with the host during capture
        raise PointFailed(f"CUDA graph capture failed: {type(err).__name__}: {_first_line(err)}") from err

    def replay() -> torch.Tensor:
        graph.replay()
        return static_output

    return replay


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else "(no message)"


def build_runner(
    forward: Forward, x: torch.Tensor, mode: str, precision: str, warmup: int = 3
) -> Callable[[], torch.Tensor]:
    """A no-argument callable that runs one inference on `x` and returns its output tensor (for
    cudagraph, the graph's static output, overwritten by each replay). Compilation and capture happen
    here, with `warmup` untimed calls, so the timed calls see a ready model."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    set_matmul_precision(precision)
    forward = with_precision(forward, precision, x.device.type)
    if mode == "eager":
        return _no_grad(forward, x)
    if mode == "compile":
        return _compiled(forward, x, warmup)
    return _cuda_graph(forward, x, warmup)
