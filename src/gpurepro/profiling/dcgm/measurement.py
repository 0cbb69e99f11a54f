"""DCGM beside a measuring job: where its samples go (`<stem>.dcgm.csv` beside the job's telemetry
trace or raw table) and what the job's provenance records about DCGM, sampled or not."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .monitor import dcgm_monitor


def dcgm_out_path(requested: str | None, trace_out: str | None, out: str | None) -> Path | None:
    """Where a measurement's DCGM samples go: the path given, or for `auto` `<stem>.dcgm.csv` beside the
    telemetry trace (`<stem>.telemetry.csv`) or the raw table; None when not requested or nowhere to go."""
    if requested is None or requested == "off":
        return None
    if requested != "auto":
        return Path(requested)
    beside = trace_out or out
    if beside is None:
        return None
    path = Path(beside)
    stem = path.name.removesuffix(".csv").removesuffix(".telemetry")
    return path.with_name(f"{stem}.dcgm.csv")


@contextlib.contextmanager
def monitor_if_requested(gpu_indices: Sequence[int], out_path: Path | None) -> Iterator[dict[str, Any]]:
    """dcgm_monitor when a path is given; yields what the run's provenance records about DCGM, and says on
    stderr when DCGM is not there."""
    if out_path is None:
        yield {"available": False, "note": "DCGM not requested"}
        return
    with dcgm_monitor(gpu_indices, out_path) as status:
        if not status.available:
            print(status.note, file=sys.stderr)
        yield {
            "available": status.available,
            "reason": status.reason,
            "file": out_path.name if status.available else None,
            "note": status.note,
        }
