"""The GPUs a run asks for (config `device` and `gpus`), checked against what NVML finds before any job.

A dry run plans for hardware that is not here (a GPU profile on a laptop), so planning never asks NVML
for more than it has; a real run would otherwise start, spend minutes on the jobs that need no GPU, and
fail in its first measurement, leaving a results folder behind. The check runs where the run starts its
jobs (Snakemake's onstart) and says, in one line, what was asked for, what NVML found and what to type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import GpureproError
from ..nvml import GpuInfo
from ..profiles import check_gpu_matches


def missing_indices(requested: Sequence[int] | str, found: Sequence[GpuInfo]) -> str | None:
    """Config `gpus` naming indices NVML does not have: the line that says so, or None."""
    if requested == "all":
        return None
    here = [gpu.index for gpu in found]
    missing = sorted(set(requested) - set(here))
    if not missing:
        return None
    return f"config gpus={list(requested)}: GPU(s) {missing} do not exist here; NVML sees indices {here}"


def check_start(
    profile: Mapping[str, Any],
    requested: Sequence[int] | str,
    found: Sequence[GpuInfo],
    nvml_problem: str,
    device_check: str,
) -> list[str]:
    """Stop (GpureproError, one line) when the GPUs NVML finds cannot be those the run asks for: none at
    all, fewer than config `gpus` names, or another model than the profile's while device_check=error.
    Returns the mismatches device_check=warn lets the run measure anyway, for the run to print.
    """
    name = profile["name"]
    if profile["kind"] != "gpu":
        return []
    if not found:
        raise GpureproError(
            f"device={name} needs an NVIDIA GPU of that model, but NVML finds none here: "
            f"{nvml_problem or 'it reports no GPU'}. "
            f"Plan without running with snakemake -n --config device={name}, or measure the CPU with "
            "device=auto"
        )
    missing = missing_indices(requested, found)
    if missing:
        raise GpureproError(f"device={name}: {missing}. Name GPUs that exist, or gpus=all")
    selected = [gpu for gpu in found if requested == "all" or gpu.index in requested]
    try:
        warnings = [check_gpu_matches(dict(profile), gpu, device_check) for gpu in selected]
    except GpureproError as err:
        raise GpureproError(f"device={name}: {err}") from err
    return [f"device={name}: {warning}" for warning in warnings if warning]
