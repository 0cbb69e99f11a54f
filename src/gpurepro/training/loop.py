"""One process's training: build the model on its device, warm up, then time logging intervals until an
iteration count, a duration or a stop signal (SIGTERM/SIGINT: how the noise workload is ended).

Timing: the device is synchronised at each interval's end and host wall time taken between those points,
so an interval's time covers all its steps, queued work included, and nothing of the next. The warm-up
(cuDNN's algorithm search with `benchmark`, allocator growth, DDP's first buckets) is one row of its own
that every rate leaves out.
"""

from __future__ import annotations

import math
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch.nn.parallel import DistributedDataParallel

from ..precision import AUTOCAST, set_matmul_precision
from . import distributed
from .batches import DataOptions, make_batches, plan_data
from .model import build_model, loss_function, optimizer


@dataclass(frozen=True)
class TrainSettings:
    model: str
    batch_size: int  # per process (per GPU)
    precision: str
    channels_last: bool
    warmup: int
    iterations: int | None  # timed iterations; None: until duration_s or a stop signal
    duration_s: float | None
    log_interval: int
    data: DataOptions


@dataclass(frozen=True)
class TrainResult:
    rows: pd.DataFrame  # one row per interval: the warm-up, then the timed ones
    data_name: str
    image_size: int
    num_classes: int
    parameter_checksums: list[str]  # one per rank, in rank order
    stopped_by_signal: bool


class StopFlag:
    """Set by SIGTERM or SIGINT while training, so the loop ends after its current interval.

    Stopping often signals a rank more than once at a time (torchrun passes SIGTERM on, and the noise
    workload's owner signals every process of the tree); a signal that comes seconds after the first
    means the loop is stuck (e.g. a peer died mid-collective), and interrupts it."""

    REPEAT_AFTER_S = 5.0

    def __init__(self) -> None:
        self.set = False
        self.first_at = 0.0

    @contextmanager
    def catching(self) -> Iterator[None]:
        def handler(signum: int, _frame: Any) -> None:
            if self.set and time.monotonic() - self.first_at > self.REPEAT_AFTER_S:
                raise KeyboardInterrupt(f"signal {signum} again")
            if not self.set:
                self.set, self.first_at = True, time.monotonic()

        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)


def make_step(
    model: torch.nn.Module, batches: Iterator[tuple[torch.Tensor, torch.Tensor]], settings: TrainSettings,
    device: torch.device, global_batch: int,
) -> Callable[[], torch.Tensor]:  # fmt: skip
    """One SGD step per call: forward and loss under autocast for fp16/bf16, GradScaler for fp16."""
    criterion = loss_function()
    opt = optimizer(model, global_batch)
    dtype = AUTOCAST.get(settings.precision)
    scaler = torch.amp.GradScaler(device.type) if settings.precision == "fp16" else None

    def step() -> torch.Tensor:
        images, labels = next(batches)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = criterion(model(images), labels)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss.detach()

    return step


def synchronizer(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def timed_intervals(
    step: Callable[[], torch.Tensor], synchronize: Callable[[], None], settings: TrainSettings,
    images_per_step: int, should_stop: Callable[[bool], bool], stop: StopFlag,
    on_ready: Callable[[], None] = lambda: None, progress: bool = True,
) -> pd.DataFrame:  # fmt: skip
    """Warm-up, then intervals of `log_interval` steps until the plan or `should_stop` says so.

    `should_stop(local)` turns this rank's wish to stop (duration reached, signal) into the decision of
    all ranks; the iteration count needs no vote, every rank reaches it at the same step."""
    rows: list[dict[str, Any]] = []

    def record(phase: str, interval: int, steps: int, wall: float, start: float, loss: torch.Tensor | None):
        seconds = time.perf_counter() - start
        rate = steps * images_per_step / seconds if seconds > 0 else math.nan
        rows.append({
            "phase": phase, "interval": interval, "iterations": steps, "images": steps * images_per_step,
            "seconds": seconds, "images_per_s": rate,
            "loss": math.nan if loss is None else float(loss), "t_start_unix_s": wall,
            "t_end_unix_s": wall + seconds,
        })  # fmt: skip

    wall, start, loss = time.time(), time.perf_counter(), None
    for _ in range(settings.warmup):
        loss = step()
    synchronize()
    record("warmup", 0, settings.warmup, wall, start, loss)
    on_ready()
    done, interval, timed_start = 0, 0, time.perf_counter()
    while True:
        wall, start, steps = time.time(), time.perf_counter(), 0
        while steps < settings.log_interval and (settings.iterations is None or done < settings.iterations):
            loss = step()
            steps += 1
            done += 1
        synchronize()
        interval += 1
        record("timed", interval, steps, wall, start, loss)
        if progress:
            last = rows[-1]
            print(
                f"interval {interval}: {done} iterations, {last['images_per_s']:,.1f} images/s, "
                f"loss {last['loss']:.3f}",
                file=sys.stderr,
            )
        if settings.iterations is not None and done >= settings.iterations:
            break
        elapsed = time.perf_counter() - timed_start
        if should_stop(stop.set or (settings.duration_s is not None and elapsed >= settings.duration_s)):
            break
    return pd.DataFrame(rows)


def train(
    settings: TrainSettings, device: torch.device, world: distributed.World,
    on_ready: Callable[[], None] = lambda: None, progress: bool = True,
) -> TrainResult:  # fmt: skip
    """Train on `device` as this rank of `world` (a process group is already joined when world.size > 1)."""
    plan, dataset = plan_data(settings.data)
    torch.manual_seed(settings.data.seed)  # same initial weights everywhere; DDP broadcasts rank 0's anyway
    set_matmul_precision(settings.precision)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # pick the fastest convolution algorithms, as the recipe does
    model = build_model(settings.model, plan.num_classes).to(device)
    if settings.channels_last:
        model = model.to(memory_format=torch.channels_last)
    if world.size > 1 or distributed.under_torchrun():
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    model.train()
    batches = make_batches(
        settings.data, plan, dataset, settings.batch_size, device, world.rank, settings.channels_last
    )
    global_batch = settings.batch_size * world.size
    step = make_step(model, batches, settings, device, global_batch)
    stop = StopFlag()
    with stop.catching():
        rows = timed_intervals(
            step, synchronizer(device), settings, global_batch,
            lambda local: distributed.any_rank(local, device), stop, on_ready, progress and world.leader,
        )  # fmt: skip
    checksums = distributed.gather(distributed.parameter_checksum(model))
    return TrainResult(
        rows, plan.name, plan.image_size, plan.num_classes, [str(c) for c in checksums], stop.set
    )
