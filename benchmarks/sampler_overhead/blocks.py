"""A block of back-to-back operations of a workload, timed between two synchronisations, and how many
operations make a block of a given length."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Timed = tuple[float, float, float]  # a block's seconds, and its start and end on time.time()


@dataclass(frozen=True)
class Work:
    """One operation of a workload (queued on the device) and the device's synchronisation."""

    description: str
    step: Callable[[], object]
    synchronize: Callable[[], None]


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
