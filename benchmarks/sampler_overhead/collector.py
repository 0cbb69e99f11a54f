"""Python's garbage collector kept out of a row's blocks: a full collection walks every tracked object,
as long as a block, wherever the interpreter starts one."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
