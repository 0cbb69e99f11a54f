"""How many DataLoader worker processes to start.

`auto` is one per usable CPU core but one (left for the process driving the GPU), at most 16: enough to
keep a GPU fed with JPEG decoding on a typical node, where the loader bench shows whether it is. The
workflow reads this at parse time, so it imports nothing heavy.
"""

from __future__ import annotations

import os

from ..errors import GpureproError

MAX_AUTO_WORKERS = 16


def usable_cpus() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. under Slurm), not all the host's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def resolve_workers(value: int | str) -> int:
    """'auto' -> one per usable core but one, at least 1 and at most 16; a number as it is."""
    if value == "auto":
        return max(1, min(usable_cpus() - 1, MAX_AUTO_WORKERS))
    if isinstance(value, bool) or not str(value).isdigit():
        raise GpureproError(f"loader workers must be 'auto' or a number 0 or more, got {value!r}")
    return int(value)
