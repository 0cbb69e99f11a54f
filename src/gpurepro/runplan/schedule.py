"""The wall time of the planned jobs run as Snakemake runs them locally: a job starts once the jobs it
waits for are done and its cores and resources are free (at most one measurement per GPU: gpu_<i> = 1),
in the order the plan lists them. Snakemake's own scheduler picks among ready jobs differently, but
with the GPU jobs in one line per GPU the wall time is set by that line and what waits for it.

On a cluster (simulate_cluster) the limit is the number of jobs Snakemake keeps submitted at once
(--jobs), and a group job is one of them, running its jobs one after another in its allocation."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

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


def group_units(jobs: Sequence[PlannedJob], seconds: Sequence[float]) -> tuple[list[PlannedJob], list[float]]:
    """The jobs as a cluster runs them: each group job one unit that takes its jobs' seconds in all
    (they run one after another) and starts once every job it waits for outside the group is done; a
    job of no group a unit of its own. Units keep the plan's order of their first job."""
    index: dict[tuple[str, object], int] = {}
    unit_of = [
        index.setdefault(("job", i) if job.group is None else ("group", job.group), len(index))
        for i, job in enumerate(jobs)
    ]
    members: list[list[int]] = [[] for _ in index]
    for i, unit in enumerate(unit_of):
        members[unit].append(i)
    units = []
    for n, held in enumerate(members):
        after = {unit_of[dep] for i in held for dep in jobs[i].after} - {n}
        units.append(replace(jobs[held[0]], threads=1, resources={}, after=tuple(sorted(after))))
    return units, [sum(seconds[i] for i in held) for held in members]


def simulate_cluster(jobs: Sequence[PlannedJob], seconds: Sequence[float], slots: int) -> Schedule:
    """When the last job ends with at most `slots` jobs or group jobs running at once, each started as
    soon as what it waits for is done (the cluster is assumed to have a GPU free for each: no queue)."""
    units, unit_seconds = group_units(jobs, seconds)
    return simulate(units, unit_seconds, slots, {})
