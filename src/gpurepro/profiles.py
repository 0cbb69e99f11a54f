"""Device profiles (config/devices/<name>.yaml): loading, the `quick` overrides, and picking one for a GPU.

A profile holds everything that differs per GPU model. `device=auto` maps the NVML name of the GPUs
present to a profile through each profile's `nvml_names` regular expressions; no GPU means `cpu`.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from . import registry
from .errors import GpureproError
from .nvml import GpuInfo
from .schema import first_error

CPU_PROFILE = "cpu"
# Sections of a profile that may carry a `quick` mapping of shorter settings: the studies' (registry.py).
STUDY_SECTIONS = registry.SECTIONS


def project_root() -> Path:
    """The checkout this package belongs to (src/gpurepro/ -> ../..), or the working directory."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "config" / "devices").is_dir() else Path.cwd()


def devices_dir() -> Path:
    """Where profiles live: $GPUREPRO_DEVICES_DIR, ./config/devices, or the checkout's config/devices."""
    env = os.environ.get("GPUREPRO_DEVICES_DIR")
    if env:
        return Path(env)
    local = Path.cwd() / "config" / "devices"
    return local if local.is_dir() else project_root() / "config" / "devices"


def schema_path() -> Path:
    return devices_dir().parent.parent / "workflow" / "schemas" / "device.schema.yaml"


def profile_names(directory: Path | None = None) -> list[str]:
    return sorted(p.stem for p in (directory or devices_dir()).glob("*.yaml"))


def read_profile(name: str, directory: Path | None = None) -> dict[str, Any]:
    """Parse a profile without validating it (the Snakefile validates with snakemake.utils.validate)."""
    directory = directory or devices_dir()
    path = directory / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(profile_names(directory)) or "none"
        raise GpureproError(f"device profile '{name}' does not exist ({path}); known profiles: {known}")
    with path.open() as fh:
        profile = yaml.safe_load(fh)
    if not isinstance(profile, dict) or profile.get("name") != name:
        raise GpureproError(f"{path}: the profile's `name` must be '{name}', the file's own name")
    return profile


def validate_profile(profile: dict[str, Any], schema_file: Path | None = None) -> None:
    """Check a profile against workflow/schemas/device.schema.yaml, naming the bad key and value."""
    problem = first_error(profile, schema_file or schema_path())
    if problem:
        raise GpureproError(f"device profile '{profile.get('name')}': {problem}")


def load_profile(name: str, quick: bool = False, directory: Path | None = None) -> dict[str, Any]:
    """Read and validate a profile, then apply its quick settings when asked."""
    profile = read_profile(name, directory)
    validate_profile(profile)
    return with_quick_settings(profile, quick)


def with_quick_settings(profile: dict[str, Any], quick: bool) -> dict[str, Any]:
    """A copy of the profile whose study sections take their `quick` values when quick is set."""
    result = copy.deepcopy(profile)
    for section in STUDY_SECTIONS:
        settings = result.get(section)
        if not isinstance(settings, dict):
            continue
        shorter = settings.pop("quick", {}) or {}
        if quick:
            settings.update(shorter)
    return result


def matches(profile: dict[str, Any], gpu_name: str) -> bool:
    return any(re.search(pattern, gpu_name) for pattern in profile.get("nvml_names", []))


def profile_for_gpu(gpu_name: str, directory: Path | None = None) -> str | None:
    """The profile whose nvml_names match this NVML device name, or None."""
    for name in profile_names(directory):
        if matches(read_profile(name, directory), gpu_name):
            return name
    return None


def pick_profile(gpus: list[GpuInfo], directory: Path | None = None) -> str:
    """The profile `device=auto` uses for these GPUs: cpu for none; an error when unknown or mixed."""
    if not gpus:
        return CPU_PROFILE
    picks = {gpu.name: profile_for_gpu(gpu.name, directory) for gpu in gpus}
    unknown = [name for name, pick in picks.items() if pick is None]
    if unknown:
        raise GpureproError(
            f"GPU '{unknown[0]}' matches no device profile (known: {', '.join(profile_names(directory))}). "
            "Name one that fits with --config device=<name>, or add config/devices/<name>.yaml "
            "with an nvml_names pattern for this GPU."
        )
    chosen = set(picks.values())
    if len(chosen) > 1:
        listing = "; ".join(f"{gpu.index}: {gpu.name}" for gpu in gpus)
        raise GpureproError(
            f"this machine mixes GPU models ({listing}); choose GPUs of one model with "
            "--config gpus=[...] and name the profile with --config device=<name>"
        )
    return chosen.pop()  # type: ignore[return-value]


def check_gpu_matches(profile: dict[str, Any], gpu: GpuInfo | None, mode: str) -> str | None:
    """Stop (mode 'error') or warn (mode 'warn') when the GPU found is not the profile's model.

    Returns the mismatch message in warn mode (to be recorded in provenance), None when all is well.
    """
    if profile["kind"] == CPU_PROFILE:
        return None
    if gpu is None:  # nothing to measure, whatever the mode
        raise GpureproError(
            f"device profile '{profile['name']}' needs an NVIDIA GPU, but NVML finds none here"
        )
    if matches(profile, gpu.name):
        return None
    found = profile_for_gpu(gpu.name)
    message = (
        f"GPU {gpu.index} is '{gpu.name}' (profile '{found or 'none'}'), "
        f"but the run asked for profile '{profile['name']}'"
    )
    if mode == "error":
        raise GpureproError(
            f"{message}. Run with --config device=auto (or the matching profile), or measure anyway "
            "and record the mismatch with --config device_check=warn."
        )
    return message


def idle_seconds(section: Mapping[str, Any], config: Mapping[str, Any]) -> float:
    """Seconds of idle-power baseline before each point of a study: its profile section's own (quick runs
    of the repeated studies take a shorter one, spending the time on more processes), else config
    telemetry.idle_seconds; never below telemetry.min_energy_window_s, the shortest window NVML's energy
    counter is trusted over."""
    telemetry = config["telemetry"]
    own = float(section.get("idle_seconds", telemetry["idle_seconds"]))
    return max(own, float(telemetry["min_energy_window_s"]))


def cooldown_max_wait_s(config: Mapping[str, Any], study: str | None = None) -> float:
    """The longest cool-down wait before a point of `study`: config telemetry.cooldown_max_wait_s, or in a
    quick run telemetry.quick.cooldown_max_wait_s where set (a quick run checks every claim within
    minutes; its hot points on a card that started cold would each wait 20-45 s to get back to its first
    temperature), and none at all for a study not in telemetry.cooldown_studies (a quick run's own, where
    set) where that is set."""
    telemetry = config["telemetry"]
    quick = (telemetry.get("quick") or {}) if config.get("quick") else {}
    studies = quick.get("cooldown_studies", telemetry.get("cooldown_studies"))
    if studies is not None and study is not None and study not in studies:
        return 0.0
    return float(quick.get("cooldown_max_wait_s", telemetry["cooldown_max_wait_s"]))
