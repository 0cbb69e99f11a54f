"""Where each job of the workflow runs, asked of one object by the rule files: which GPU, which CPU slice,
how many threads, which resources hold its GPUs, and the container prefix of its command.

The same object serves the local and the cluster (SLURM) paths, so that a rule never switches on where it
runs: on this machine's GPUs a job holds the `gpu_<g>` resource of its GPU (profiles/default caps each at
1, so two measurements never share a GPU while jobs on different GPUs run side by side); on a cluster a
GPU job asks the scheduler for one GPU of the profile's model and measures GPU 0 of its allocation; the
cpu profile measures the CPU and holds no GPU.

With two or more GPUs here and config `placement: claim_groups`, the measuring points of the rules the
registry places are packed by claim group (groups.py, packing.py): a claim group's jobs of one round hold
its GPU, and the kinds of point config `host_to_itself` lists take every core (host_share.py). What kind a
rule is (placed or not, every core or one, MPS or not) is read from its record in registry.py.

A job's GPU reaches its command as a param derived from its resources, never from its wildcards: another
GPU selection places the groups anew, and Snakemake reruns a job whose params changed, not one whose
resources did, so nothing measured is measured again because it would now run on another card.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Protocol

from .. import registry
from ..host import SLICE_GPUS_VAR
from . import groups, host_share, packing

# A planned measuring point: its rule and wildcards (the sweeps' values, numbers or strings).
Point = tuple[str, Mapping[str, Any]]
# What a Snakemake resource, param or threads entry may be: a value, or a function of the job's wildcards
# (and resources), which Snakemake calls with the arguments its parameters name.
Entry = Any


class Containers(Protocol):
    """What placement needs of the container plan (containers/plan.py ContainerPlan)."""

    def exec_prefix(self, gpus: Any = (), caps: Sequence[str] = ()) -> str: ...

    def job_gpu(self, host_gpu: int | str) -> int | str: ...


class Placer:
    """Placement of the workflow's jobs, for one config, device profile and GPU selection.

    gpus: the planned GPUs (none on the cpu profile; on a cluster, one allocation each). cores: every
    core Snakemake was given. gpu_model: the model a cluster GPU job asks for ("any": any). seconds: the
    studies' models of the registered points' seconds (runplan/durations.py), asked once, when the first
    placed job is planned: the same config and GPUs always give the same placement.
    """

    def __init__(
        self,
        *,
        gpus: Sequence[int],
        gpu_profile: bool,
        cluster: bool,
        claim_groups: bool,
        host_to_itself: AbstractSet[str],
        cores: int,
        gpu_model: str,
        containers: Containers,
        seconds: Callable[[Sequence[Point]], Sequence[float]],
    ) -> None:
        self.gpus = tuple(gpus)
        self.gpu_profile = gpu_profile
        self.cluster = cluster
        self.host_to_itself = frozenset(host_to_itself)
        self.cores = cores
        self.gpu_model = gpu_model
        self.containers = containers
        self._seconds = seconds
        self._points: list[Point] = []
        self._placement: packing.Placement | None = None
        self._planned: frozenset[groups.JobKey] | None = None
        # a job on this machine's GPUs (not the cpu profile, not a cluster allocation)
        self.local_gpus = gpu_profile and not cluster
        # claim-affine placement: two or more GPUs here, and config placement claim_groups. One GPU
        # keeps every point on it; the cpu profile and a cluster keep their one GPU (or none) a job.
        self.placed = self.local_gpus and len(self.gpus) > 1 and claim_groups
        # the GPU a job without a placement of its own measures: the first selected, GPU 0 of a cluster
        # job's allocation, or "cpu"
        self.measure_gpu: int | str = (0 if cluster else self.gpus[0]) if gpu_profile else "cpu"
        # the GPU argument of a job with a {gpu} wildcard (a shell snippet, so local commands name the
        # wildcard's GPU): GPU 0 of a cluster allocation, "cpu" on the cpu profile, on a cluster too
        self.gpu_argument = "0" if cluster and gpu_profile else "{wildcards.gpu}"
        # the same two as the job's command names them: inside a Docker job its GPUs count from 0
        self.job_gpu = containers.job_gpu(self.measure_gpu)
        self.job_gpu_argument = str(containers.job_gpu(self.gpu_argument))

    # -- the points placed by claim group, registered by the rule files as they are read

    def plan(self, rule: str, points: Sequence[Mapping[str, Any]]) -> None:
        """Register the planned points of a placed rule: the placement packs every registered point, not
        only those one invocation plans, so a plan of one figure places its points as the whole run does.
        """
        if self._placement is not None or self._planned is not None:
            raise RuntimeError(f"{rule}: points registered after the placement was made")
        self._points += [(rule, point) for point in points]

    @property
    def points(self) -> tuple[Point, ...]:
        return tuple(self._points)

    def points_of(self, rule: str) -> list[Mapping[str, Any]]:
        """The planned points of one rule, in the order they were registered."""
        return [point for planned, point in self._points if planned == rule]

    def placement(self) -> packing.Placement:
        """The claim groups of the registered points packed onto the GPUs, by their modelled seconds;
        made once, when the first placed job asks."""
        if self._placement is None:
            self._placement = packing.place(self._points, list(self._seconds(self._points)), self.gpus)
        return self._placement

    def _planned_keys(self) -> frozenset[groups.JobKey]:
        if self._planned is None:
            self._planned = groups.planned_keys(self._points)
        return self._planned

    def write_record(self, path: Path) -> None:
        """`<results>/placement.json` at the start of a run on this machine's GPUs: each claim group's GPU,
        round by round."""
        if self.local_gpus:
            packing.write(self.placement(), path)

    def cluster_group(self, rule: str, wildcards: Mapping[str, Any]) -> str | None:
        """The Snakemake group of a measuring job on a cluster: its claim group and round (groups.py)."""
        return groups.cluster_group(rule, dict(wildcards.items()), self._planned_keys())

    # -- resources

    def cluster_resources(self) -> dict[str, Entry]:
        """What a cluster GPU job asks the scheduler for: one GPU, of the configured model."""
        return {"gpu": 1} if self.gpu_model == "any" else {"gpu": 1, "gpu_model": self.gpu_model}

    def measure_resources(self) -> dict[str, Entry]:
        """The resources of a job that measures one GPU, the first selected: its `gpu_<g>` and one of
        `gpu` here, one GPU of the cluster there, none on the cpu profile."""
        if self.measure_gpu == "cpu":
            return {}
        if self.cluster:
            return self.cluster_resources()
        return {f"gpu_{self.measure_gpu}": 1, "gpu": 1}

    def all_gpus_resources(self) -> dict[str, Entry]:
        """Every selected GPU, for a job that uses them all at once (a node job, the noise workload
        beside a measurement); none on the cpu profile."""
        if not self.gpu_profile:
            return {}
        return {**{f"gpu_{g}": 1 for g in self.gpus}, "gpu": len(self.gpus)}

    def per_gpu_resources(self) -> dict[str, Entry]:
        """The resources of a job with a {gpu} wildcard: the `gpu_<g>` of the wildcard's GPU."""
        if not self.gpu_profile:
            return {}
        if self.cluster:
            return self.cluster_resources()
        claims = {f"gpu_{g}": (lambda wildcards, g=g: int(int(wildcards.gpu) == g)) for g in self.gpus}
        return {**claims, "gpu": 1}

    def resources(self, rule: str) -> dict[str, Entry]:
        """The resources of a placed rule's jobs: under placement the `gpu_<g>` of its claim group's GPU in
        its round, and one MPS daemon on the node at a time for a rule whose record runs MPS points (two
        daemons serving two GPUs at once were never tried; profiles/default caps mps_daemon at 1);
        otherwise measure_resources."""
        if not self.placed:
            return self.measure_resources()
        claims: dict[str, Entry] = {
            f"gpu_{g}": (lambda wildcards, g=g: int(self.placement().gpu(rule, dict(wildcards.items())) == g))
            for g in self.gpus
        }
        if registry.BY_RULE[rule].mps:
            claims["mps_daemon"] = lambda wildcards: int(wildcards.scheme == "mps")
        return {**claims, "gpu": 1}

    def own_gpu_resources(self, rule: str) -> dict[str, Entry]:
        """A rule with one job per selected GPU under placement ({gpu}: each holds its own GPU) and one job
        of a claim group otherwise (the reference rates: reference.smk)."""
        return self.per_gpu_resources() if self.placed else self.resources(rule)

    # -- the GPU a job's command names

    def host_gpu(self, wildcards: Any, resources: Any) -> int | str:
        """The GPU a placed job measures: the one whose `gpu_<g>` it holds."""
        return next((g for g in self.gpus if getattr(resources, f"gpu_{g}", 0)), self.measure_gpu)

    def params(self) -> dict[str, Entry]:
        """The GPU params of a placed rule: `gpu`, the one its command names (0 inside a Docker job), and on
        this machine's GPUs `host_gpu`, the host's index (a Docker job's --gpus). The cpu profile and a
        cluster take job_gpu: there a param read from resources would have Snakemake size inputs while
        planning."""
        if not self.local_gpus:
            return {"gpu": self.job_gpu}
        return {
            "gpu": lambda wildcards, resources: self.containers.job_gpu(self.host_gpu(wildcards, resources)),
            "host_gpu": lambda wildcards, resources: self.host_gpu(wildcards, resources),
        }

    def per_gpu_params(self) -> dict[str, Entry]:
        """params for a rule with a {gpu} wildcard on this machine's GPUs: `gpu`, the one its command names
        (0 inside a Docker job), and `host_gpu`, the wildcard's."""
        return {
            "gpu": lambda wildcards: self.containers.job_gpu(wildcards.gpu),
            "host_gpu": lambda wildcards: wildcards.gpu,
        }

    def own_gpu_params(self) -> dict[str, Entry]:
        """params of a rule placed as own_gpu_resources places it."""
        return self.per_gpu_params() if self.placed else self.params()

    def container_prefix(self) -> str:
        """The container prefix of a placed rule's command: its own GPU (params.host_gpu) on this
        machine's GPUs, else the one it measures."""
        return self.containers.exec_prefix("{params.host_gpu}" if self.local_gpus else self.measure_gpu)

    # -- threads and CPUs

    def measure_threads(self) -> int:
        """A CPU measurement takes every core, so nothing runs beside it; a GPU job needs one."""
        return 1 if self.gpu_profile else self.cores

    def unplaced_threads(self, rule: str) -> int:
        """The threads of a measuring rule's jobs without placement, as in the one-GPU plan: every core
        here for a rule whose record says so (eager inference at batch 1 launches hundreds of kernels from
        Python; on one H100, eager DeiT-B blocks timed beside other jobs spread over an IQR of 13% of
        their median); on a cluster the scheduler gives each job its own cores."""
        if registry.BY_RULE[rule].every_core and not self.cluster:
            return self.cores
        return self.measure_threads()

    def threads(self, rule: str) -> Entry:
        """The threads of a placed measuring rule's jobs: every core for the kinds of point that keep the
        host to themselves under placement, one otherwise; without placement, unplaced_threads."""
        if not self.placed:
            return self.unplaced_threads(rule)
        return lambda wildcards: (
            self.cores
            if host_share.takes_the_host(rule, dict(wildcards.items()), self.host_to_itself)
            else self.measure_threads()
        )

    def flags(self, rule: str, flags: str) -> Entry:
        """The `flags` param of a placed measuring rule: under placement, where a job's threads differ from
        the one-GPU plan's, with `--torch-threads` of the one-GPU plan, so that a point measures with the
        same torch threads wherever it is placed (a job that keeps the host holds every core to keep other
        jobs off it, not to use them). Without placement the flags as they are."""
        if not self.placed:
            return flags
        wanted, held = self.unplaced_threads(rule), self.threads(rule)
        return lambda wildcards: flags if held(wildcards) == wanted else f"{flags} --torch-threads {wanted}"

    def environment(self) -> dict[str, str]:
        """What the workflow sets in its jobs' environment for placement: under placement the GPUs whose
        jobs run side by side, whose CPU slices a job pins to (host.cpu_slice)."""
        return {SLICE_GPUS_VAR: ",".join(str(g) for g in self.gpus)} if self.placed else {}
