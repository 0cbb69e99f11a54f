"""The options every measuring `gpurepro` subcommand takes from the config and profile, and the checks of
a profile's points that stop a plan, written once for every study's rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import profiles


def measurement_flags(
    config: Mapping[str, Any],
    device: str,
    cooldown_dir: str,
    study: str,
    energy_window_s: float | None = None,
    section: Mapping[str, Any] | None = None,
) -> str:
    """Options every measuring subcommand of `study` takes: profile, seed, CPU pinning, telemetry. A study
    may ask for a longer energy window than telemetry.min_energy_window_s, never a shorter one; its
    profile `section` may set a shorter idle baseline (profiles.idle_seconds); a quick run may leave its
    cool-downs out (profiles.cooldown_max_wait_s)."""
    t = config["telemetry"]
    window = max(t["min_energy_window_s"], energy_window_s or 0)
    idle = profiles.idle_seconds(section or {}, config)
    pin = config["host"]["pin"] or "off"  # a bare `off` in YAML reads as false
    return (
        f"--profile {device} --seed {config['seed']} --pin {pin} "
        f"--rate-hz {t['rate_hz']} --sampler {t['sampler']} "
        f"--idle-seconds {idle} --energy-window-s {window} "
        f"--cooldown-max-wait-s {profiles.cooldown_max_wait_s(config, study)} "
        f"--idle-temperature-dir {cooldown_dir}"
    )


def end_record_flag(gpu_profile: bool, cooldown_dir: str) -> str:
    """GPU work that is no measurement (training, the reference rates) records its end in the run's
    cool-down folder, so the next measurement on its GPUs settles after it (telemetry/cooldown.py)."""
    return f"--idle-temperature-dir {cooldown_dir}" if gpu_profile else ""


def inference_points_problem(
    profile: Mapping[str, Any], device: str, key: str, precisions: Sequence[str], modes: Sequence[str]
) -> str | None:
    """Why the inference points of profile key `key` cannot run (a precision the GPU lacks, cudagraph
    without a GPU), in one line naming the key and value; None when they can."""
    where = f"bad device profile config/devices/{device}.yaml: key inference.{key}"
    unsupported = sorted(set(precisions) - set(profile["precisions"]))
    if unsupported:
        return f"{where}: precisions {unsupported} not in the profile's precisions {profile['precisions']}"
    if profile["kind"] != "gpu" and "cudagraph" in modes:
        return f"{where}: cudagraph needs a GPU"
    return None
