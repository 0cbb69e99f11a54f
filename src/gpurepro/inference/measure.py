"""Latency with torch.utils.benchmark, as the original scripts measured it, and the harness Workload.

How latency is taken: `Timer("run()").blocked_autorange(min_run_time)`. The Timer first finds a block
size (runs per block) large enough that its own overhead is negligible (this doubles as warm-up), then
times whole blocks until `min_run_time` has passed. Each block is timed from a device synchronisation to
the next, so a block's time / its runs is the mean latency of back-to-back inferences in that block; the
reported median, IQR and count are over those per-block values (torch's `Measurement.times`), exactly as
the Timer's own summary. The Timer is handed our clock, which synchronises the device and also notes the
wall-clock time, so every block gets host bounds (t_start_unix_s, t_end_unix_s) to line up telemetry.

Energy is not taken here: the harness runs the Workload's `operation` (one inference) back to back over
a separate window of `--energy-window-s` seconds and reads NVML's energy counter around it, after an
active idle (the model built and warm, the device at rest) in a window of its own. The timed blocks and
the energy window each run inside one region of the runner (modes.py: one autocast region with its cast
cache for eager fp16/bf16, as the artifact timed its model).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import pandas as pd
import torch
from torch.utils import benchmark

from ..harness import Workload
from .models import BuiltModel
from .modes import Runner, build_runner


class StampingClock:
    """A timer for torch.utils.benchmark: synchronise the device, return perf_counter, and remember the
    wall-clock time of every call. timeit calls it twice per block (before and after), so consecutive
    pairs of stamps are the blocks' wall-clock bounds."""

    def __init__(self, synchronize: Callable[[], None]) -> None:
        self.synchronize = synchronize
        self.stamps: list[float] = []

    def __call__(self) -> float:
        self.synchronize()
        now = time.perf_counter()
        self.stamps.append(time.time())
        return now


def time_blocked(
    run: Callable[[], object], synchronize: Callable[[], None], min_run_time: float
) -> tuple[pd.DataFrame, benchmark.Measurement]:
    """One row per measured block: ms (per-inference time in that block), runs in the block, and its
    wall-clock bounds; with torch's Measurement (median, IQR) for the same blocks."""
    clock = StampingClock(synchronize)
    timer = benchmark.Timer(
        stmt="run()",
        globals={"run": run},
        timer=clock,
        # all threads, as in the energy window (the Timer's default is 1, which would slow CPU runs)
        num_threads=torch.get_num_threads(),
    )
    measurement = timer.blocked_autorange(min_run_time=min_run_time)
    blocks = len(measurement.raw_times)
    bounds = clock.stamps[-2 * blocks :]  # the last pairs belong to the measured blocks
    rows = [
        {
            "block": i,
            "runs": measurement.number_per_run,
            "ms": measurement.times[i] * 1e3,
            "t_start_unix_s": bounds[2 * i],
            "t_end_unix_s": bounds[2 * i + 1],
        }
        for i in range(blocks)
    ]
    return pd.DataFrame(rows), measurement


def describe_measurement(m: benchmark.Measurement) -> str:
    """The Timer's summary in the original's words: median, IQR (p25 to p75), measurements, runs each."""
    p25, p75 = pd.Series(m.times).quantile([0.25, 0.75]) * 1e3  # linear, as torch's own quantiles
    return (
        f"median {m.median * 1e3:.3f} ms, IQR {m.iqr * 1e3:.3f} ms ({p25:.3f} to {p75:.3f}), "
        f"{len(m.times)} measurements, {m.number_per_run} runs per measurement"
    )


def synchronizer(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


def inference_workload(
    build: Callable[[], BuiltModel],
    mode: str,
    precision: str,
    min_run_time: float,
    warmup: int,
    label: str,
) -> Workload:
    """Build the model, check the mode's output against eager, and hand the harness the timed blocks, one
    inference for its energy window, the runner's region around both, and a request for an active idle.
    Called inside the harness, after the idle baseline."""
    model = build()
    device = model.example.device
    synchronize = synchronizer(device)
    eager = build_runner(model.forward, model.example, "eager", precision)
    reference = eager().clone()
    run: Runner = (
        eager if mode == "eager" else build_runner(model.forward, model.example, mode, precision, warmup)
    )
    if mode == "eager":
        with run.region():
            for _ in range(warmup):
                run()
    difference = max_abs_diff(run(), reference)
    synchronize()
    print(
        f"{label}: {model.architecture} ({model.parameters / 1e6:.1f} M parameters, {model.library}), "
        f"casts: {run.cast_protocol}, output vs eager: max abs difference {difference:.3g}",
        file=sys.stderr,
    )

    def timed_reps() -> pd.DataFrame:
        blocks, measurement = time_blocked(run, synchronize, min_run_time)
        print(f"{label}: {describe_measurement(measurement)}", file=sys.stderr)
        blocks["parameters"] = model.parameters
        blocks["output_max_abs_diff_vs_eager"] = difference
        blocks["status"] = "ok"
        blocks["reason"] = ""
        return blocks

    return Workload(timed_reps, run, synchronize, active_idle=True, region=run.region)
