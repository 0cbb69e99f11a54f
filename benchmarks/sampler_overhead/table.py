"""The printed table: its header and legend, one line per row, and the conditions the measured process
ran under."""

from __future__ import annotations

import math
import os
import statistics

from gpurepro import stats

from .estimate import pair_ratios, verdict
from .rows import Row

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
