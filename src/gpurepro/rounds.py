"""Repeats over processes: how many independent processes measure a point, and the rounds they run in.

One process is one sample (docs/design.md): a figure that the host paces moves 10-60% from one process to the
next on one host, so every point runs in k processes of its own, k from the device profile's study
section (`repeats`: one count, or counts by what the point is for). A point a claim reads starts at
`claims` processes (3: no point a claim reads stands on fewer, more_processes/plan.py) and gets more only
while the claim stays inconclusive (more_processes.smk); a point only a figure shows runs `host_paced`
processes where the host paces it (2: the figure shows a second process's spread) and `gpu_bound` where
the GPU does (1: processes of a GPU-bound point agree within a percent or two). Which claims read a point
is more_processes/purpose.py's answer, passed in here as `read`.

The repeats run in rounds: round r of every point of a sweep runs before round r+1 of any (the rule files
make round r+1 of a point wait for round r of all: round_order.waits_for), so a drift of the room or the
host over the run spreads over all points instead of biasing the ones measured last, and two points'
figures of one round can be paired (process_stats.ratio_interval). Within a round the points a claim
reads run in a seeded order that reverses every round (round_order.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Largest batch (inference) or B (HFTA) whose stock figures the host paces on the GPUs measured so far:
# an eager batch-1 forward keeps an H100 busy 10-21% of the time, a fused B=8 step about half of it.
HOST_PACED_MAX_BATCH = 8


# Processes a point a claim reads starts at where the section's `repeats` names no `claims` count.
CLAIM_PROCESSES = 3


def repeats(section: Mapping[str, Any], host_paced: bool, read: bool = False) -> int:
    """The processes a point of this study section runs in: `repeats` as one count for every point, or
    its claims count where a claim reads the point (`read`), else its host_paced or gpu_bound count; 1
    where the section names none."""
    count = section.get("repeats", 1)
    if isinstance(count, Mapping):
        if read:
            return int(count.get("claims", CLAIM_PROCESSES))
        return int(count["host_paced" if host_paced else "gpu_bound"])
    return int(count)


def most_repeats(section: Mapping[str, Any]) -> int:
    """The largest count any point of the section runs in (the rounds a sweep has)."""
    return max(repeats(section, paced, read) for paced in (True, False) for read in (True, False))


def inference_host_paced(mode: str, batch: int | str) -> bool:
    """Eager inference at a small batch waits on the host queuing its kernels; compiled or replayed as a
    CUDA graph, or at large batches, the GPU paces it."""
    return mode == "eager" and int(batch) <= HOST_PACED_MAX_BATCH


def hfta_host_paced(scheme: str, step: str, b: int | str) -> bool:
    """Serial training (one model's step at a time) and stock steps at small B wait on the host; graphed
    or compiled steps and large fused arrays keep the GPU busy."""
    return scheme == "serial" or (step == "stock" and int(b) <= HOST_PACED_MAX_BATCH)


def inference_repeats(section: Mapping[str, Any], point: Mapping[str, Any], read: bool = False) -> int:
    """Processes an inference point (wildcards mode and batch) runs in; `read`: a claim reads it."""
    return repeats(section, inference_host_paced(point["mode"], point["batch"]), read)


def hfta_repeats(section: Mapping[str, Any], point: Mapping[str, Any], read: bool = False) -> int:
    """Processes an HFTA point (wildcards scheme, step and b) runs in; `read`: a claim reads it."""
    return repeats(section, hfta_host_paced(point["scheme"], point["step"], point["b"]), read)


def zipped(points: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Points (dicts of wildcards) as lists of equal length per wildcard, for expand(..., zip, ...)."""
    return {name: [point[name] for point in points] for name in points[0]}


def with_runs(points: Iterable[Mapping[str, Any]], count: Any) -> list[dict[str, Any]]:
    """Each point once per run (run = 1..count(point)), round by round."""
    points = list(points)
    counts = [int(count(point)) for point in points]
    return [
        {**point, "run": run}
        for run in range(1, max(counts, default=0) + 1)
        for point, k in zip(points, counts, strict=True)
        if run <= k
    ]


def previous_round(pattern: str, points: Iterable[Mapping[str, Any]], run: int | str) -> list[str]:
    """The files of round `run` - 1 of every point of the sweep (`points` with their `run`), which round
    `run` waits for; none for the first round."""
    before = int(run) - 1
    return [pattern.format(**point) for point in points if int(point["run"]) == before]
