"""A row of the table: pairs of blocks, one without the sampler ("off") and one with it ("on"), in a
random order within each pair, for no sampler (the noise floor), a sampling process paused and resumed,
or a sampler thread started and stopped around each on-block; and what a sampler's start and stop cost."""

from __future__ import annotations

import argparse
import gc
import os
import random
import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gpurepro.telemetry import ProcessSampler, TelemetrySource, ThreadSampler, Trace, open_sampler

from .blocks import Timed, Work, time_block
from .collector import collections, collector_off

NO_SAMPLER = "none"  # pairs of blocks both without a sampler: the noise floor


@dataclass
class Row:
    """Block times of one row, and the rate its sampler achieved during each on-block."""

    off_s: list[float] = field(default_factory=list)
    on_s: list[float] = field(default_factory=list)
    on_spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each on-block
    achieved_hz: list[float] = field(default_factory=list)
    missed: int = 0  # deadlines inside on-blocks that got no sample
    collections: int = 0  # garbage collections during the row (after the one it starts with)
    garbage: int = 0  # unreachable objects a collection found after the row: what it left, uncollected

    def record(self, on: bool, timed: Timed) -> None:
        seconds, start, end = timed
        if on:
            self.on_s.append(seconds)
            self.on_spans.append((start, end))
        else:
            self.off_s.append(seconds)

    def account(self, traces: list[Trace], resumed: bool) -> None:
        """The rate achieved and deadlines missed in each on-block, from the trace that covers it; where
        the sampler was resumed for the block, counted once it is back on its schedule (after_resume)."""
        for trace, (start, end) in zip(traces, self.on_spans, strict=True):
            start = after_resume(trace, start, end) if resumed else start
            self.achieved_hz.append(trace.rate_between(start, end))
            self.missed += round(trace.deadlines_between(start, end) - trace.samples_between(start, end))


def after_resume(trace: Trace, start: float, end: float) -> float:
    """The instant just after the second sample (of every device) between start and end, where a paused
    sampling process was resumed at start; start if it took fewer. On SIGCONT the sampler first takes
    the sample its pause held back, for a deadline before the block, then at once one for the latest
    deadline passed, which may lie before the block too, and only then returns to its schedule:
    counted, those two would read as samples too many for the block."""
    second = trace.between(start, end).groupby("device")["time_unix_s"].nth(1)
    if second.empty:
        return start
    return float(np.nextafter(second.max(), np.inf))


def alternate(pairs: int, run_block: Callable[[bool], Timed]) -> Row:
    """`pairs` pairs of blocks, off and on in a random order within each pair, back to back, after one
    off-block left out: what ran just before the row (a full collection that walked every object, a
    sampling process starting) leaves caches and the host's load unlike those of the blocks after it,
    and would fall on the first pair's first block alone."""
    run_block(False)
    row = Row()
    for _ in range(pairs):
        for on in random.sample([False, True], 2):
            row.record(on, run_block(on))
    return row


def unsampled_row(work: Work, count: int, pairs: int) -> Row:
    """The noise floor: "off" and "on" blocks alike, with no sampler."""
    return alternate(pairs, lambda _on: time_block(work, count))


def paused_process_row(work: Work, count: int, source: TelemetrySource, rate: float, pairs: int) -> Row:
    """One sampling process through the row: paused (SIGSTOP) for the off-blocks, running (SIGCONT) for
    the on-blocks. A stopped process leaves a call into the driver only once it returned, so a pause
    holds no lock the measured work could wait on."""
    with ProcessSampler(source, rate) as sampler:
        pid = sampler.pid
        assert pid is not None

        def run_block(on: bool) -> Timed:
            os.kill(pid, signal.SIGCONT if on else signal.SIGSTOP)
            return time_block(work, count)

        try:
            row = alternate(pairs, run_block)
        finally:
            os.kill(pid, signal.SIGCONT)  # a paused worker could not hear stop() and report
    assert sampler.trace is not None
    row.account([sampler.trace] * len(row.on_spans), resumed=True)
    return row


def restarted_thread_row(work: Work, count: int, source: TelemetrySource, rate: float, pairs: int) -> Row:
    """A sampler thread started before each on-block and stopped after it: a thread cannot be paused."""
    traces: list[Trace] = []

    def run_block(on: bool) -> Timed:
        if not on:
            return time_block(work, count)
        with ThreadSampler(source, rate) as sampler:
            timed = time_block(work, count)
        assert sampler.trace is not None
        traces.append(sampler.trace)
        return timed

    row = alternate(pairs, run_block)
    row.account(traces, resumed=False)
    return row


def sampled_row(
    args: argparse.Namespace, work: Work, count: int, source: TelemetrySource, kind: str, rate: float
) -> Row:
    if kind == NO_SAMPLER:
        return unsampled_row(work, count, args.pairs)
    if kind == "process":
        return paused_process_row(work, count, source, rate, args.pairs)
    return restarted_thread_row(work, count, source, rate, args.thread_pairs)


def run_row(
    args: argparse.Namespace, work: Work, count: int, source: TelemetrySource, kind: str, rate: float
) -> Row:
    """One row with the garbage collector kept out of it (see collector_off), its collections counted,
    and the cyclic garbage it left (memory that grew while the collector was off) collected after it."""
    with collector_off(args.keep_gc):
        before = collections()
        row = sampled_row(args, work, count, source, kind, rate)
        row.collections = collections() - before
    row.garbage = gc.collect()
    return row


def sampler_costs(source: TelemetrySource, kind: str, times: int = 5) -> tuple[float, float]:
    """Median seconds that start() and stop() take."""
    starts, stops = [], []
    for _ in range(times):
        sampler = open_sampler(source, 50, kind)
        began = time.perf_counter()
        sampler.start()
        starts.append(time.perf_counter() - began)
        time.sleep(0.1)
        began = time.perf_counter()
        sampler.stop()
        stops.append(time.perf_counter() - began)
    return statistics.median(starts), statistics.median(stops)
