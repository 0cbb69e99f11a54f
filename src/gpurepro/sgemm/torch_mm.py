"""FP32 SGEMM through torch.mm (backend `torch`): the same measurement path the CUDA kernels plug into.

TF32 is switched off so the GPU does true FP32 FMA work, as the original cuBLAS study did. The reference
rates of the verdict time FP16 tensor-core products through the same class (`dtype`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd
import torch


def flops(n: int) -> float:
    """Floating-point operations of one N x N x N product (a multiply and an add per term)."""
    return 2.0 * n**3


def make_operands(
    n: int, device: torch.device, seed: int, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded uniform random A, B and an output buffer C. Random data, not zeros: zeros draw less power."""
    generator = torch.Generator(device=device).manual_seed(seed)
    a = (torch.rand((n, n), generator=generator, device=device) - 0.5).to(dtype)
    b = (torch.rand((n, n), generator=generator, device=device) - 0.5).to(dtype)
    return a, b, torch.empty((n, n), device=device, dtype=dtype)


def synchronizer(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def bind(device: torch.device) -> torch.device:
    """Make `device` the current CUDA device of this process (a no-op on the CPU) and return it.

    Work placed on cuda:g runs on GPU g whatever the current device is, but an event recorded without a
    stream, a graph capture or a library handle lands on the *current* device: on a host where every GPU
    is visible, GPU g's timings would otherwise be GPU 0's idle stream. Call it only where the job may
    create the CUDA context (after the harness's idle baseline)."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def timed_call_ms(call: Callable[[], None], device: torch.device) -> float:
    """Milliseconds of one call: CUDA events around it on a GPU (the device's own clock, no host
    overhead), perf_counter on a CPU. The events are recorded on `device`'s own current stream, where
    the call's kernels run, whichever GPU is current."""
    if device.type == "cuda":
        with torch.cuda.device(device):
            stream = torch.cuda.current_stream(device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            call()
            end.record(stream)
        end.synchronize()
        return start.elapsed_time(end)
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1e3


def relative_error(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, rows: int = 64, seed: int = 0) -> float:
    """Relative Frobenius error of sampled rows of C = A @ B against a float64 product of the same rows."""
    generator = torch.Generator().manual_seed(seed)
    picked = torch.randperm(a.shape[0], generator=generator)[: min(rows, a.shape[0])].to(a.device)
    reference = a[picked].double() @ b.double()
    return float(torch.linalg.norm(c[picked].double() - reference) / torch.linalg.norm(reference))


class TorchSgemm:
    """One N x N FP32 product on persistent operands, shared by the timed reps and the energy window
    (a second set of operands would not fit at the study's N=25536 on a 16 GB V100)."""

    def __init__(self, n: int, device: torch.device, seed: int, dtype: torch.dtype = torch.float32) -> None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.n, self.device, self.seed = n, bind(device), seed
        self.a, self.b, self.c = make_operands(n, device, seed, dtype)
        self.synchronize = synchronizer(device)

    def __call__(self) -> None:
        torch.mm(self.a, self.b, out=self.c)

    def timed_reps(self, reps: int, warmup: int) -> pd.DataFrame:
        """Time `reps` products after `warmup`, one row per rep: CUDA events on a GPU, perf_counter on a
        CPU; host wall-clock bounds per rep so telemetry samples can be matched to it."""
        for _ in range(warmup):
            self()
        self.synchronize()
        rows = []
        for rep in range(reps):
            t_start = time.time()
            ms = timed_call_ms(self, self.device)
            rows.append({"rep": rep, "ms": ms, "t_start_unix_s": t_start, "t_end_unix_s": time.time()})
        frame = pd.DataFrame(rows)
        frame["tflops"] = flops(self.n) / (frame["ms"] * 1e-3) / 1e12
        frame["verify_rel_err"] = relative_error(self.a, self.b, self.c, seed=self.seed)
        return frame
