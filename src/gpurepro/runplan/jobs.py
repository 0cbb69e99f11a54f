"""The planned jobs as plain records: what the estimate needs of Snakemake's DAG, and no more."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PlannedJob:
    rule: str
    wildcards: Mapping[str, str] = field(default_factory=dict)
    threads: int = 1
    # Resources the job holds while it runs (gpu_0, gpu, ...); cores are `threads`.
    resources: Mapping[str, int] = field(default_factory=dict)
    # Snakemake's benchmark file of the job (relative to the working folder), if the rule has one.
    benchmark: str | None = None
    # Indices (into the plan's list) of the jobs this one waits for.
    after: tuple[int, ...] = ()
    # The Snakemake group job it runs in on a cluster (one allocation that runs its jobs one after
    # another: profiles/slurm), None for a job of its own.
    group: str | None = None


def from_dag(dag: Any) -> list[PlannedJob]:
    """The jobs a Snakemake DAG will run (also after a dry-run, which marks them finished), in an order of
    their own (rule, then wildcards): Snakemake lists them in an order that moves with the folder the
    workflow sits in, and the estimate, which starts ready jobs in the plan's order, must not."""
    jobs = sorted(dag.needrun_jobs(exclude_finished=False), key=_order)
    index = {job: i for i, job in enumerate(jobs)}
    return [
        PlannedJob(
            rule=job.rule.name,
            wildcards={k: str(v) for k, v in dict(job.wildcards_dict).items()},
            threads=int(job.threads),
            resources=_held(job.resources.items()),
            benchmark=str(job.benchmark) if job.benchmark else None,
            after=tuple(index[dep] for dep in dag.dependencies[job] if dep in index),
            group=_group(dag, job),
        )
        for job in jobs
    ]


def _order(job: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    return job.rule.name, tuple(sorted((str(k), str(v)) for k, v in dict(job.wildcards_dict).items()))


def _group(dag: Any, job: Any) -> str | None:
    """The name of the group job a job runs in (groups exist only where jobs go to a cluster)."""
    group = dag.get_job_group(job)
    return None if group is None else str(group.groupid)


def _held(resources: Iterable[tuple[str, Any]]) -> dict[str, int]:
    """The countable resources a job holds, without Snakemake's own (_cores, _nodes, tmpdir, ...)."""
    return {
        name: int(value)
        for name, value in resources
        if not name.startswith("_") and isinstance(value, int) and not isinstance(value, bool) and value > 0
    }
