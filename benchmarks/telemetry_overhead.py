#!/usr/bin/env python3
"""How much does the telemetry sampler slow the work it measures, in its own process and as a thread?

Three workloads, all in this one process:
- sgemm: FP32 matrix products (4096^3 on a GPU), bound by the GPU; the host waits.
- deit-b: eager DeiT-B inference at batch 1 under fp16 autocast (about 7 ms on an H100), bound by the
  host: Python launches one kernel per op, and a sampler thread competes with it for the interpreter.
- resnet18: one training step of the HFTA study's ResNet-18 (64x64 images, 200 classes) at batch 32,
  SGD with momentum under AMP (fp16 autocast and a gradient scaler), also bound by the host.

Each workload is built, warmed up, and sized into blocks of back-to-back operations of about --block-s
seconds. A row of the table times --pairs pairs of blocks, one block "off" and one "on", each pair in a
random order and every block straight after the one before, with no idle gap in which the GPU's clocks
could drop, so that drift in clocks, temperature or the host's load falls on both alike. A row starts
with one block left out (the set-up before it leaves caches and the host's load unlike the blocks
after). Python's garbage collector stays out of the blocks: before each row it collects, freezes every
object it tracks and is switched off until the row ends (--keep-gc leaves it on): a full collection
walks some 400,000 objects with torch loaded, up to 0.2 s, a block's length. The measured process is
not pinned to CPUs: the header records the CPUs it may use and the host's load. For a given time per
row, shorter blocks and more pairs resolve finer where block times drift (successive blocks correlate),
as a pair's blocks then lie closer together: on a 2-core CPU host, rows without a sampler gave 95%
intervals of +-0.16% with 400 pairs of 0.05 s blocks, +-0.31% with 200 of 0.1 s, +-0.49% with 100 of
0.2 s (20% trimmed mean, both host-bound workloads). A GPU host's launches are noisier: on an H100,
the host-bound rows needed 1,600 pairs of 0.05 s (--pairs 1600 --block-s 0.05) to resolve 0.5%
(+-0.3%; +-0.4% to +-1.6% with 400). The rows:
- none: no sampler at all; "off" and "on" blocks are timed alike. Its spread is the noise floor: what
  an overhead must exceed to be seen at all on this host and workload.
- process: one sampling process started for the whole row and kept running through it. "Off" blocks are
  timed with it paused (SIGSTOP: it exists but takes no CPU time and makes no NVML call), "on" blocks
  with it running (SIGCONT), so the row compares sampling with no sampling and nothing else: no start or
  stop between blocks. A resumed sampler finds the deadlines of its pause passed and counts them as
  dropped, and takes two samples at once (the one its pause held back, then one for the latest deadline
  passed) before it returns to its schedule; both are the pausing's, not the sampler's, so the row
  reports only what happened inside its on-blocks once the sampler is back on its schedule: the rate
  achieved there (Trace.rate_between per on-block) and the deadlines there that got no sample
  ("missed"), never the trace's dropped count. Those catch-up samples (and, on a GPU, an energy read
  the energy thread owes) still fall in the on-block's time: one sample more than a running sampler
  takes in a block, so if anything the row overstates the sampler's cost.
- thread: a sampler thread cannot be paused, so it is started before each "on" block and stopped after
  it (the thread's start and stop take under 5 ms and lie outside the timed block). Fewer pairs
  (--thread-pairs), as each costs a start and stop.

Printed per row: the pairs, the rate achieved during the on-blocks (median and lowest) and the deadlines
missed in them, the garbage collections during the row, the median block time off and on, and the
per-pair on/off ratios: their median with its 95% bootstrap interval and their interquartile range (the
spread of single pairs); their mean, as the exp of the mean of their logs with --trim (20%) cut at
either end, with its 95% bootstrap interval; and a verdict against --target (0.5%): "<0.5%" where the
mean's interval lies below 1.005, ">=0.5%" where it lies above, "unresolved" where it straddles it. For
normal noise the trimmed mean's interval is 0.86 times as wide as the median's from the same pairs (the
median needs 1.35 times the pairs); for the heavy-tailed noise of a CPU host 0.8 to 1.5 times as wide
(see log_mean). Before the table: the idle baseline, each sampler's start and stop cost, and the
conditions of the measured process.

    python benchmarks/telemetry_overhead.py [--device 0] [--workloads sgemm deit-b resnet18]
        [--rates 50 200] [--samplers process thread none] [--pairs 200] [--thread-pairs 50]
        [--block-s 0.1] [--target 0.005] [--trim 0.2] [--keep-gc]

`--device cpu` runs the same code on the CPU, e.g. as a smoke run with small sizes:

    python benchmarks/telemetry_overhead.py --device cpu --sgemm-n 256 --vit deit-t --resnet-batch 4 \
        --resnet-image-size 32 --pairs 5 --block-s 0.1 --idle-s 1
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import trim_mean

from gpurepro import nvml, stats
from gpurepro.hfta.workloads import workload as hfta_workload
from gpurepro.hfta_study.training import _Trainer
from gpurepro.inference.measure import synchronizer
from gpurepro.inference.models import VIT_MODELS, build_vit
from gpurepro.inference.modes import build_runner
from gpurepro.sgemm.torch_mm import TorchSgemm
from gpurepro.telemetry import (
    SAMPLERS,
    ProcessSampler,
    TelemetrySource,
    ThreadSampler,
    Trace,
    measure_idle,
    open_sampler,
    open_source,
)

WORKLOADS = ("sgemm", "deit-b", "resnet18")
NO_SAMPLER = "none"  # pairs of blocks both without a sampler: the noise floor
Timed = tuple[float, float, float]  # a block's seconds, and its start and end on time.time()
TARGET = 0.005  # the overhead the verdict column judges against: 0.5%
TRIM = 0.2  # the share of per-pair log ratios cut at either end before their mean (see log_mean)


@dataclass(frozen=True)
class Work:
    """One operation of a workload (queued on the device) and the device's synchronisation."""

    description: str
    step: Callable[[], object]
    synchronize: Callable[[], None]


def sgemm(args: argparse.Namespace, device: torch.device) -> Work:
    product = TorchSgemm(args.sgemm_n, device, seed=0)
    return Work(f"FP32 {args.sgemm_n}^3 matrix product", product, product.synchronize)


def deit(args: argparse.Namespace, device: torch.device) -> Work:
    model = build_vit(args.vit, 1, device)
    run = build_runner(model.forward, model.example, "eager", args.precision)
    return Work(f"eager {model.architecture} batch 1 {args.precision}", run, synchronizer(device))


def resnet18(args: argparse.Namespace, device: torch.device) -> Work:
    spec = hfta_workload("resnet18", image_size=args.resnet_image_size)
    torch.manual_seed(0)
    model = spec.make_model().to(device)
    inputs, targets = spec.make_batch(args.resnet_batch, torch.Generator().manual_seed(0), device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    trainer = _Trainer(model, optimizer, F.cross_entropy, args.precision, device.type)
    return Work(
        f"{spec.description}, training step at batch {args.resnet_batch}, SGD, {args.precision}",
        lambda: trainer.step(inputs, targets),
        synchronizer(device),
    )


BUILDERS: dict[str, Callable[[argparse.Namespace, torch.device], Work]] = {
    "sgemm": sgemm,
    "deit-b": deit,
    "resnet18": resnet18,
}


def time_block(work: Work, count: int) -> Timed:
    """(seconds, start, end) of `count` operations between two synchronisations; start and end on
    time.time(), the clock the samplers stamp with."""
    work.synchronize()
    start_unix, started = time.time(), time.perf_counter()
    for _ in range(count):
        work.step()
    work.synchronize()
    return time.perf_counter() - started, start_unix, time.time()


def block_size(work: Work, block_s: float) -> tuple[int, float]:
    """Operations per block of about block_s seconds, and one operation's seconds: after a warm-up,
    from a run of a tenth of a block at least, so that short operations are timed over many."""
    time_block(work, 5)
    count = 1
    while (seconds := time_block(work, count)[0]) < block_s / 10:
        count *= 2
    one = seconds / count
    return max(1, round(block_s / one)), one


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


def collections() -> int:
    """Collections the garbage collector has made so far, of every generation, asked for or not."""
    return sum(generation["collections"] for generation in gc.get_stats())


@contextmanager
def collector_off(keep: bool = False) -> Iterator[None]:
    """A full collection, then the collector frozen and off until the block exits (with keep, only the
    collection). Why: the interpreter starts a collection wherever allocations of tracked objects outrun
    deallocations by 700, in a block as anywhere; a young one takes well under a millisecond, but once
    the survivors of young ones add a quarter to the old objects, one walks every tracked object: some
    400,000 with torch and timm loaded, 0.2 s on a 2-core CPU host, a block's length, against the
    0.5 ms that 0.5% of a 0.1 s block is. The steady steps rarely start one (rows without a sampler
    on the CPU saw 0 or 1 in 60 pairs with the collector on), but the thread rows would see more than
    the others: their sampler keeps a dict per sample and each trace builds a DataFrame. Frozen objects
    (gc.freeze) are skipped by any collection a library still asks for. No cyclic garbage piles up
    meanwhile (on the CPU, a collection after 50 steps of either host-bound workload with the collector
    off found none; run_row reports what one finds after each row). In normal use the sampler thread's
    dicts would bring a young collection every ~3.5 s at 200 Hz: a negligible cost this leaves out.
    """
    gc.collect()
    if keep:
        yield
        return
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


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


@dataclass(frozen=True)
class Ratios:
    """The per-pair on/off ratios of a row: their median and mean (see log_mean), and quartiles."""

    median: stats.Interval
    mean: stats.Interval
    q1: float
    q3: float


def log_mean(ratios: np.ndarray, trim: float, axis: int = -1) -> np.ndarray:
    """exp of the mean of the log ratios along `axis`, `trim` of them cut at either end first.
    Logs, so that a pair's ratio r and its inverse 1/r weigh alike. Without a sampler the on and off
    blocks of a pair are alike, so their log ratio is symmetric about 0 whatever the blocks' noise, and
    a cost that every on-block bears shifts it: median, mean and trimmed mean all estimate that shift,
    and differ in how wide their intervals are. Simulated with 200 pairs, relative to the median's: for
    normal noise the mean 0.82, 10% trimmed 0.84, 20% trimmed 0.86; for Laplace noise 1.36, 1.17, 1.09;
    for 5% of pairs ten times as noisy 1.89, 0.85, 0.87. On a 2-core CPU host (no-sampler rows of 100
    to 400 pairs, log ratios of kurtosis above 20: a few blocks many times slower) 20% trimmed was 0.8
    to 1.5 times as wide as the median, the mean 1.1 to 35 times. Hence 20% by default. A cost only a
    few on-blocks bore would be cut with the tails: --trim 0 keeps every pair, in the plain mean."""
    return np.exp(trim_mean(np.log(ratios), trim, axis=axis))


def pair_ratios(row: Row, trim: float = TRIM) -> Ratios:
    """Both statistics with their 95% percentile bootstrap intervals (gpurepro.stats), seeded alike, so
    over the same resamples of the pairs, and a row prints the same twice."""
    ratios = np.array(row.on_s) / np.array(row.off_s)
    q1, q3 = np.percentile(ratios, [25, 75])
    return Ratios(
        stats.median_interval(ratios),
        stats.bootstrap([ratios], partial(log_mean, trim=trim)),
        float(q1),
        float(q3),
    )


def verdict(estimate: stats.Interval, target: float) -> str:
    """The cost against target: below it where the whole interval is, at or above it where the whole
    interval is above, else unresolved (more pairs, or less noise, would be needed to tell)."""
    limit, label = 1 + target, f"{target * 100:g}%"
    if estimate.high < limit:
        return f"<{label}"
    if estimate.low > limit:
        return f">={label}"
    return "unresolved"


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


HEADER = (
    f"{'workload':>9} {'sampler':>8} {'rate_hz':>7} {'pairs':>5} {'achieved':>8} {'min_hz':>7} "
    f"{'missed':>6} {'gc':>9} {'off_ms':>8} {'on_ms':>8} {'median':>7} {'95% interval':>13} "
    f"{'pair IQR':>13} {'mean':>7} {'95% interval':>13} {'verdict':>10}"
)
LEGEND = """\
rows: none = no sampler, the noise floor; process = one sampling process per row, paused (SIGSTOP) in
the off-blocks and running in the on-blocks; thread = a sampler thread started and stopped around each
on-block. achieved, min_hz, missed: the sampler's rate during the on-blocks (median, lowest; a resumed
process counted once back on its schedule) and the deadlines there without a sample. gc: the garbage
collector's runs during the row (0 unless --keep-gc, or a library asked for one) / the unreachable
objects a collection found after it (garbage left while it was off). off_ms, on_ms: median block times.
Per-pair on/off ratios: median with its 95% bootstrap interval, interquartile range; mean (exp of the
mean log ratio, {trim:.0%} cut at either end) with its 95% bootstrap interval; verdict: the mean's
interval below 1+{target:g} (<), above it (>=), or across it (unresolved)."""


def achieved_columns(row: Row) -> str:
    """achieved, min_hz and missed; dashes for a row without a sampler. An on-block left with no deadline
    once a resumed sampler is back on its schedule (a short block at a low rate) has no rate (NaN) and is
    left out."""
    rates = [rate for rate in row.achieved_hz if not math.isnan(rate)]
    if not rates:
        return f"{'-':>8} {'-':>7} {'-':>6}"
    return f"{statistics.median(rates):>8.1f} {min(rates):>7.1f} {row.missed:>6}"


def interval(estimate: stats.Interval) -> str:
    return f"{estimate.low:.4f}-{estimate.high:.4f}"


def format_row(workload: str, kind: str, rate: float, row: Row, trim: float, target: float) -> str:
    ratios = pair_ratios(row, trim)
    off_ms, on_ms = statistics.median(row.off_s) * 1e3, statistics.median(row.on_s) * 1e3
    gc_runs = f"{row.collections}/{row.garbage}"
    return (
        f"{workload:>9} {kind:>8} {rate:>7.0f} {len(row.on_s):>5} {achieved_columns(row)} {gc_runs:>9} "
        f"{off_ms:>8.2f} {on_ms:>8.2f} {ratios.median.value:>7.4f} {interval(ratios.median):>13} "
        f"{ratios.q1:.4f}-{ratios.q3:.4f} {ratios.mean.value:>7.4f} {interval(ratios.mean):>13} "
        f"{verdict(ratios.mean, target):>10}"
    )


def conditions(keep_gc: bool) -> str:
    """How the measured process ran, for the record: the collector, the CPUs it may use (not pinned: the
    pipeline does not pin it either, and pinning would keep the sampler off its CPU, hiding a cost it
    may have in use), and the host's load, which other work on it adds to the noise."""
    collector = "on" if keep_gc else "collected, frozen and off during each row"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0]
    return (
        f"garbage collector: {collector}; CPUs: {cpus} of {os.cpu_count()} allowed, none pinned; "
        f"load average {load:.2f} (1 min)"
    )


def rows_of(args: argparse.Namespace) -> list[tuple[str, float]]:
    """(sampler, rate) of every row of a workload: the noise floor first."""
    rows = [(kind, rate) for rate in args.rates for kind in args.samplers if kind != NO_SAMPLER]
    return ([(NO_SAMPLER, 0.0)] if NO_SAMPLER in args.samplers else []) + rows


def benchmark_workload(
    args: argparse.Namespace, workload: str, device: torch.device, source: TelemetrySource, name: str
) -> None:
    work = BUILDERS[workload](args, device)
    count, one_s = block_size(work, args.block_s)
    time_block(work, count)  # a whole block as warm-up: clocks and caches settle at the block's load
    print(f"{workload}: {count} x {work.description} per block on {name} ({one_s * 1e3:.2f} ms each)")
    for kind, rate in rows_of(args):
        row = run_row(args, work, count, source, kind, rate)
        print(format_row(workload, kind, rate, row, args.trim, args.target), flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", help="GPU index, or 'cpu' (default: 0 where a GPU is, else cpu)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    kinds = [*SAMPLERS, NO_SAMPLER]
    parser.add_argument("--samplers", nargs="+", choices=kinds, default=kinds)
    parser.add_argument("--rates", type=float, nargs="+", default=[50.0, 200.0])
    parser.add_argument("--pairs", type=int, default=200, help="pairs of blocks per row (default 200)")
    parser.add_argument(
        "--thread-pairs", type=int, help="pairs per thread row, each with a start and stop (default 50)"
    )
    parser.add_argument("--block-s", type=float, default=0.1, help="seconds per block (default 0.1)")
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument(
        "--target", type=float, default=TARGET, help="overhead the verdict judges against (default 0.005)"
    )
    parser.add_argument(
        "--trim", type=float, default=TRIM, help="share of log ratios cut at either end of the mean (0.2)"
    )
    parser.add_argument(
        "--keep-gc", action="store_true", help="leave the garbage collector on in rows (to compare)"
    )
    parser.add_argument("--sgemm-n", type=int, help="default: 4096 on a GPU, 512 on the CPU")
    parser.add_argument(
        "--vit", choices=list(VIT_MODELS), default="deit-b", help="DeiT size (default deit-b)"
    )
    parser.add_argument("--resnet-batch", type=int, default=32)
    parser.add_argument("--resnet-image-size", type=int, default=64)
    parser.add_argument(
        "--precision", help="deit and resnet18: default fp16 (autocast) on a GPU, fp32 on the CPU"
    )
    args = parser.parse_args()
    if args.pairs < 2 or (args.thread_pairs is not None and args.thread_pairs < 2):
        parser.error("a row needs at least 2 pairs")
    if not 0 <= args.trim < 0.5:
        parser.error("--trim must be at least 0 and below 0.5")
    if args.device is None:
        args.device = "0" if nvml.available()[0] else "cpu"
    on_gpu = args.device != "cpu"
    args.sgemm_n = args.sgemm_n or (4096 if on_gpu else 512)
    args.precision = args.precision or ("fp16" if on_gpu else "fp32")
    args.thread_pairs = args.thread_pairs or min(args.pairs, 50)
    return args


def main() -> None:
    args = parse_args()
    nvml.number_cuda_like_nvml()  # CUDA's GPU N is NVML's GPU N, whose telemetry is read
    gpu = None if args.device == "cpu" else int(args.device)
    device = torch.device("cpu" if gpu is None else f"cuda:{gpu}")
    source = open_source(None if gpu is None else [gpu])
    name = "cpu" if gpu is None else nvml.all_gpu_info()[gpu].name
    began = time.perf_counter()
    try:
        for baseline in measure_idle(source, args.idle_s, 50).values():
            print(
                f"idle {name}: {baseline.power_w:.1f} W ({baseline.method}), {baseline.temperature_c:.0f} C"
            )
        for kind in [k for k in args.samplers if k != NO_SAMPLER]:
            start_s, stop_s = sampler_costs(source, kind)
            print(f"{kind} sampler: start {start_s * 1e3:.1f} ms, stop {stop_s * 1e3:.1f} ms (median of 5)")
        print(conditions(args.keep_gc))
        print(LEGEND.format(trim=args.trim, target=args.target))
        print(HEADER)
        for workload in args.workloads:
            benchmark_workload(args, workload, device, source, name)
    finally:
        source.close()
    print(f"{time.perf_counter() - began:.0f} s in all")


if __name__ == "__main__":
    main()
