"""The estimate a run prints before its first job (and a dry-run at its end): the planned jobs' wall
time, how much of it each study's measurements take, and what it rests on."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import durations, schedule
from .jobs import PlannedJob

# The resource of one GPU of this machine (measure_resources of the placement object, placement/placer.py):
# gpu_0, gpu_1, ...
GPU_RESOURCE = re.compile(r"gpu_\d+")


@dataclass(frozen=True)
class Estimate:
    jobs: int
    wall_s: float
    # the wall time with every job from its study's model (what a first run on this device is told)
    model_wall_s: float
    from_earlier: int
    # study -> (measuring jobs, their seconds in all)
    studies: Mapping[str, tuple[int, float]]
    # the cool-down waits expected before the planned GPU points, in all (durations.expected_cooldown;
    # part of wall_s where the points run one after another on one GPU)
    cooldown_s: float = 0.0
    # study -> seconds of its jobs that a first run on this device adds once (durations.first_builds):
    # part of its measurements, never of a process more
    first_builds: Mapping[str, float] = field(default_factory=dict)
    # gpu_<g> -> seconds of the jobs holding that GPU (the run's GPUs side by side)
    gpus_s: Mapping[str, float] = field(default_factory=dict)
    # the rules and seconds in all of the jobs that take every core, which run with nothing beside
    # them (host-bound measurements, a node job): the GPUs wait them out one at a time
    every_core: tuple[tuple[str, ...], float] = ((), 0.0)
    # on a cluster: how many jobs the profile lets run at once (its `jobs:`), else None
    cluster_jobs: int | None = None
    # on a cluster: the group jobs, each one allocation running one claim group's round in series
    group_jobs: int = 0
    # before the first job: Snakemake's start, its plan and the run's checks (durations.RUN_START_S)
    start_s: float = 0.0

    @property
    def total_s(self) -> float:
        """What the command takes: its start, then the jobs' wall time."""
        return self.start_s + self.wall_s


def estimate(
    jobs: Sequence[PlannedJob],
    settings: durations.RunSettings,
    results_dir: Path,
    cores: int,
    capacity: Mapping[str, int],
    cluster_jobs: int | None = None,
) -> Estimate:
    """The estimate of `jobs` run here on `cores` with the resources of `capacity`, or on a cluster
    with `cluster_jobs` jobs at once (group jobs as one, their jobs one after another)."""
    earlier = [durations.earlier(job, results_dir, settings) for job in jobs]
    builds = durations.first_builds(jobs, earlier)
    modelled = [durations.modelled(job, settings) + b for job, b in zip(jobs, builds, strict=True)]
    seconds = [m if e is None else e for m, e in zip(modelled, earlier, strict=True)]
    studies: dict[str, tuple[int, float]] = {}
    first_builds: dict[str, float] = {}
    for job, s, b in zip(jobs, seconds, builds, strict=True):
        study = durations.STUDIES.get(job.rule)
        if study is not None:
            count, total = studies.get(study, (0, 0.0))
            studies[study] = (count + 1, total + s)
            if b:
                first_builds[study] = first_builds.get(study, 0.0) + b

    def wall(times: Sequence[float]) -> schedule.Schedule:
        if cluster_jobs is None:
            return schedule.simulate(jobs, times, cores, capacity)
        return schedule.simulate_cluster(jobs, times, cluster_jobs)

    timed = wall(seconds)
    # on one core every job takes every core: nothing to tell apart
    every_core = [
        (job.rule, s) for job, s in zip(jobs, seconds, strict=True) if cores > 1 and job.threads >= cores
    ]
    return Estimate(
        jobs=len(jobs),
        wall_s=timed.wall_s,
        model_wall_s=wall(modelled).wall_s,
        from_earlier=sum(e is not None for e in earlier),
        studies=dict(sorted(studies.items(), key=lambda item: -item[1][1])),
        cooldown_s=sum(durations.expected_cooldown(job, results_dir, settings) for job in jobs),
        first_builds=first_builds,
        gpus_s={name: s for name, s in timed.busy_s.items() if GPU_RESOURCE.fullmatch(name)},
        every_core=(tuple(sorted({rule for rule, _ in every_core})), sum(s for _, s in every_core)),
        cluster_jobs=cluster_jobs,
        group_jobs=len({job.group for job in jobs if job.group is not None}),
        start_s=durations.RUN_START_S if jobs else 0.0,
    )


@dataclass(frozen=True)
class ExtraProcesses:
    """The worst case of the rounds of more processes (more_processes.smk): they are planned only once a
    claim is found inconclusive, so a dry-run cannot count them; `extra` caps them per family of points
    (None: only the processes per point do, and `rounds` rounds of them)."""

    studies: tuple[str, ...]  # the study of each family of points (hfta; inference twice: DeiT, BERT)
    extra: int | None
    rounds: int

    def worst_case(self, found: Estimate) -> tuple[int, float]:
        """Processes and seconds at most: each family's cap times its study's mean measuring job (what a
        first run adds once, such as the fused array's Triton build, left out)."""
        if self.extra is None or not self.rounds:
            return 0, 0.0
        count, seconds = 0, 0.0
        for study in self.studies:
            jobs, total = found.studies.get(study, (0, 0.0))
            if jobs:
                count += self.extra
                seconds += self.extra * (total - found.first_builds.get(study, 0.0)) / jobs
        return count, seconds


def duration(seconds: float) -> str:
    """11 min 30 s, 2 h 05 min, 45 s."""
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def _jobs(count: int) -> str:
    return f"{count} job{'s' * (count != 1)}"


def _side_by_side(found: Estimate) -> str:
    """How the GPUs share the wall time: each GPU's jobs, and the jobs that take every core, which no
    other GPU's job runs beside."""
    low, high = min(found.gpus_s.values()), max(found.gpus_s.values())
    line = (
        f"gpurepro: {len(found.gpus_s)} GPUs side by side, {duration(low)} to {duration(high)} of jobs "
        "each (claim groups packed onto them: placement.json)"
    )
    rules, seconds = found.every_core
    if not seconds:
        return line + "."
    return (
        f"{line}; jobs that take every core run one at a time with nothing beside them, "
        f"{duration(seconds)} in all ({', '.join(rules)}), while the other GPUs wait."
    )


def _on(found: Estimate, cores: int) -> str:
    """What the wall time is for: this machine's cores, or a cluster's jobs at once."""
    if found.cluster_jobs is None:
        return f"with {cores} core{'s' * (cores != 1)}"
    groups = (
        f", the {found.group_jobs} claim-group jobs each measuring one claim group's points of a round one "
        "after another on one GPU"
        if found.group_jobs
        else ""
    )
    return (
        f"of wall time on the cluster with {found.cluster_jobs} SLURM jobs running at once (the profile's "
        f"jobs:){groups}; time in SLURM's queue comes on top"
    )


def describe(
    found: Estimate,
    cores: int,
    start_temperature_c: float | None = None,
    extra: ExtraProcesses | None = None,
    placed: bool = False,
) -> str:
    """The lines the run prints (start_temperature_c: the GPU temperature the cool-downs were scaled
    for, None where unknown; extra: the rounds of more processes, whose worst case is added; placed:
    claim groups are packed onto the GPUs, whose shares of the time are then said)."""
    if not found.jobs:
        return "gpurepro: nothing to run"
    basis = (
        f"{found.from_earlier} of {found.jobs} jobs from this device's earlier benchmark files, the rest "
        f"from the studies' models (models alone: {duration(found.start_s + found.model_wall_s)})"
        if found.from_earlier
        else "from the studies' models (no earlier benchmark files of these jobs on this device)"
    )
    studies = ", ".join(f"{name} {_jobs(count)} {duration(s)}" for name, (count, s) in found.studies.items())
    planned = f"{_jobs(found.jobs)} planned, about {duration(found.total_s)} {_on(found, cores)}"
    lines = [f"gpurepro: {planned}; {basis}."]
    if studies:
        basis = "" if start_temperature_c is None else f" for a GPU starting at {start_temperature_c:g} C"
        # no cool-down (the cpu profile): nothing to say of it
        waits = (
            f" (about {duration(found.cooldown_s)} of cool-down waits, estimated{basis}; how long a GPU "
            "takes to cool differs between cards, by about 30% of the waits on H100s)"
            if found.cooldown_s
            else ""
        )
        lines.append(f"gpurepro: measurements: {studies}{waits}.")
    if placed and len(found.gpus_s) > 1:
        lines.append(_side_by_side(found))
    if extra is not None and extra.rounds and extra.studies and found.studies:
        count, seconds = extra.worst_case(found)
        lines.append(
            f"gpurepro: and at worst {count} more process{'es' * (count != 1)} where claims stay "
            f"inconclusive (more_processes.extra {extra.extra} a family of points): about "
            f"{duration(found.total_s + seconds)} in all."
            if count
            else f"gpurepro: and, where claims stay inconclusive, up to {extra.rounds} rounds of one more "
            "process for each point they read (more_processes.per_point caps a point)."
        )
    return "\n".join(lines)
