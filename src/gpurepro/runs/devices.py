"""The device profile and GPUs a run plans for, from config `device` and `gpus` and what NVML sees here.

A named profile plans for the GPUs asked for, also where NVML sees fewer or none: a dry run plans for
hardware that is not here, and a real run checks them before its first job (gpu_check.py). On a cluster
the GPUs are the compute nodes', so nothing here is asked: gpus=[0,1,2,3] there means four allocations,
each measuring GPU 0 of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from .. import nvml, profiles
from ..errors import GpureproError
from . import gpu_check


@functools.cache
def nvml_gpus() -> tuple[tuple[nvml.GpuInfo, ...], str]:
    """(every GPU NVML sees here, why it sees none): none without NVML (planning on another machine).
    Cached: device=auto, the GPU list, the estimate and the check at start all ask; NVML is asked once."""
    try:
        return tuple(nvml.all_gpu_info()), ""
    except nvml.NvmlUnavailable as err:
        return (), str(err)


def detected_gpus(requested: Sequence[int] | str) -> list[nvml.GpuInfo]:
    """The GPUs NVML sees here, limited to config `gpus` (those of them that exist)."""
    found = list(nvml_gpus()[0])
    return found if requested == "all" else [g for g in found if g.index in requested]


def resolve_device(config: Mapping[str, Any], cluster: bool) -> str:
    """The profile name: config `device`, or for auto the one matching the GPUs found (cpu if none).
    GpureproError with the one line to stop on."""
    if config["device"] != "auto":
        return str(config["device"])
    if cluster:
        raise GpureproError(
            "device=auto with cluster.enabled: the GPUs are on the compute nodes, not here; name the "
            "profile, e.g. --config device=h100"
        )
    # auto means the GPUs here: config gpus must name GPUs that exist, dry run or not
    missing = gpu_check.missing_indices(config["gpus"], nvml_gpus()[0])
    if missing:
        raise GpureproError(f"device=auto: {missing}")
    try:
        return profiles.pick_profile(detected_gpus(config["gpus"]))
    except GpureproError as err:
        raise GpureproError(f"device=auto: {err}") from err


def planned_gpus(requested: Sequence[int] | str, gpu_profile: bool, cluster: bool) -> list[int]:
    """GPU indices measured on: config `gpus` as named (sorted where NVML answers), or with gpus=all those
    NVML sees (GPU 0 without NVML, and on a cluster); none on a profile that measures the CPU."""
    if not gpu_profile:
        return []
    if requested != "all":
        return sorted(requested) if nvml_gpus()[0] else list(requested)
    here = [] if cluster else [g.index for g in detected_gpus(requested)]
    return here or [0]


def check_at_start(profile: Mapping[str, Any], config: Mapping[str, Any], cluster: bool) -> list[str]:
    """Before the first job of a real run on this machine's GPUs: GpureproError when NVML finds no GPU,
    fewer than config `gpus` names, or another model than the profile's (gpu_check.check_start); the
    mismatches device_check=warn measures anyway. Nothing to check on the cpu profile, nor on a cluster,
    where the GPUs are the nodes' and each job checks its own."""
    if profile["kind"] != "gpu" or cluster:
        return []
    found, nvml_problem = nvml_gpus()
    return gpu_check.check_start(profile, config["gpus"], found, nvml_problem, config["device_check"])


def executor_problem(gpu_profile: bool, cluster: bool, cluster_executor: bool) -> str | None:
    """Why the run cannot measure where its jobs go, or None. Known once the executor is (a dry-run plans
    without one): cluster.enabled measures GPU 0 of each job's own allocation, which is only right where
    the scheduler gives each job its own GPU."""
    if not gpu_profile or cluster_executor == cluster:
        return None
    if cluster_executor:
        return (
            "cluster.enabled is off but jobs go to a cluster executor: run with --profile profiles/slurm "
            "(it sets cluster.enabled), or add cluster={enabled: true} to your --configfile"
        )
    return (
        "cluster.enabled is on but jobs run here: every GPU job would measure GPU 0 at once. "
        "Use the default profile, or --profile profiles/slurm"
    )
