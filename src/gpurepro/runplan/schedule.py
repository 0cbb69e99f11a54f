"""The wall time of the planned jobs run as Snakemake runs them locally: a job starts once the jobs it
waits for are done and its cores and resources are free (at most one measurement per GPU: gpu_<i> = 1),
in the order the plan lists them. Snakemake's own scheduler picks among ready jobs differently, but
with the GPU jobs in one line per GPU the wall time is set by that line and what waits for it."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .jobs import PlannedJob


@dataclass(frozen=True)
class Schedule:
    wall_s: float
    # seconds each resource (gpu_0, ...) was held
    busy_s: Mapping[str, float]


def simulate(
    jobs: Sequence[PlannedJob], seconds: Sequence[float], cores: int, capacity: Mapping[str, int]
) -> Schedule:
    """When the last job ends, starting every job as early as the order, its cores and resources let it.
    A job asking for more cores or a resource than there is gets all there is (as Snakemake scales it)."""
    free = {"_cores": max(1, cores), **{k: int(v) for k, v in capacity.items()}}
    need = [
        {"_cores": min(job.threads, free["_cores"])}
        | {k: min(v, free[k]) for k, v in job.resources.items() if k in free}
        for job in jobs
    ]
    waiting_on = [set(job.after) for job in jobs]
    dependants: list[list[int]] = [[] for _ in jobs]
    for i, job in enumerate(jobs):
        for dep in job.after:
            dependants[dep].append(i)
    ready = sorted(i for i, deps in enumerate(waiting_on) if not deps)
    running: list[tuple[float, int]] = []
    busy: dict[str, float] = {}
    now = 0.0
    while ready or running:
        started = []
        for i in ready:
            if all(free[k] >= v for k, v in need[i].items()):
                for k, v in need[i].items():
                    free[k] -= v
                    if k != "_cores":
                        busy[k] = busy.get(k, 0.0) + seconds[i]
                heapq.heappush(running, (now + seconds[i], i))
                started.append(i)
        ready = [i for i in ready if i not in started]
        if not running:
            raise ValueError(f"job {jobs[ready[0]].rule} can never start: {need[ready[0]]}")
        now, done = heapq.heappop(running)
        for k, v in need[done].items():
            free[k] += v
        for i in dependants[done]:
            waiting_on[i].discard(done)
            if not waiting_on[i]:
                ready.append(i)
        ready.sort()
    return Schedule(now, busy)
