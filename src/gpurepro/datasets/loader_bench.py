"""Images per second of a DataLoader on its own, so a data bottleneck shows before a study measures.

The loader is read for a fixed wall-clock window with nothing else running: if it delivers fewer
images/s than a study's GPU consumes, the study measures the loader rather than the GPU. The first batch
is reported apart (worker start-up, first file reads) and left out of the rate; later epochs start again
with the same persistent workers when the window outlasts the dataset.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import pandas as pd
from torch.utils.data import DataLoader


@dataclass(frozen=True)
class LoaderRate:
    images_per_s: float
    images: int
    batches: int
    window_s: float
    first_batch_s: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def time_batches(loader: DataLoader, seconds: float) -> pd.DataFrame:
    """One row per batch: its size, the wait for it, and the time since the loader was started."""
    if len(loader) == 0:
        raise ValueError("the loader yields no batches")
    rows = []
    start = previous = time.perf_counter()
    first_at = None
    iterator = iter(loader)
    while first_at is None or previous - first_at < seconds:
        try:
            _, labels = next(iterator)
        except StopIteration:
            iterator = iter(loader)
            continue
        now = time.perf_counter()
        first_at = now if first_at is None else first_at
        rows.append(
            {"batch": len(rows), "images": len(labels), "wait_s": now - previous, "elapsed_s": now - start}
        )
        previous = now
    return pd.DataFrame(rows)


def rate(batches: pd.DataFrame) -> LoaderRate:
    """Images/s after the first batch: (images of later batches) / (time from first to last batch)."""
    later = batches.iloc[1:]
    window = float(batches["elapsed_s"].iloc[-1] - batches["elapsed_s"].iloc[0])
    images = int(later["images"].sum())
    return LoaderRate(
        images_per_s=images / window if window > 0 else float("nan"),
        images=images,
        batches=len(later),
        window_s=window,
        first_batch_s=float(batches["elapsed_s"].iloc[0]),
    )
