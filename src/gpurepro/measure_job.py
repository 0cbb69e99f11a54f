"""What every measuring subcommand does around its workload: resolve the profile, check the GPU against
it, refuse to overwrite results, record provenance, run the shared harness and write the raw files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from . import harness, nvml, provenance
from .commands.options import telemetry_settings
from .errors import GpureproError
from .profiles import check_gpu_matches, load_profile, pick_profile
from .results import ensure_absent, write_raw
from .telemetry import open_source
from .telemetry.align import attach


@dataclass(frozen=True)
class Target:
    """Where a job runs: a GPU index or the CPU, and the profile its results are filed under."""

    gpu_index: int | None
    profile: dict[str, Any]
    device_mismatch: str | None

    @property
    def torch_device(self) -> str:
        return "cpu" if self.gpu_index is None else f"cuda:{self.gpu_index}"


def resolve_target(gpu: int | str, profile_name: str | None, device_check: str) -> Target:
    """Pick or load the profile and stop (or warn) when the GPU found is not its model."""
    gpu_index = None if gpu == "cpu" else int(gpu)
    info = None
    if gpu_index is not None:
        try:
            with nvml.session():
                info = nvml.gpu_info(gpu_index)
        except nvml.NvmlUnavailable as err:
            raise GpureproError(f"cannot measure on GPU {gpu_index}: {err}") from err
    if profile_name is None:
        profile_name = pick_profile([info] if info else [])
    profile = load_profile(profile_name)
    if profile["kind"] == "cpu" and gpu_index is not None:
        raise GpureproError(f"profile 'cpu' measures on the CPU; pass 'cpu' instead of GPU {gpu_index}")
    if profile["kind"] == "gpu" and gpu_index is None:
        raise GpureproError(f"profile '{profile_name}' measures a GPU; pass a GPU index instead of 'cpu'")
    mismatch = check_gpu_matches(profile, info, device_check)
    if mismatch:
        print(f"warning: {mismatch}; measuring anyway (device_check=warn)", file=sys.stderr)
    return Target(gpu_index, profile, mismatch)


def run_job(
    args: argparse.Namespace,
    target: Target,
    describe: dict[str, Any],
    prepare: Callable[[], harness.Workload],
) -> pd.DataFrame:
    """Measure with the shared harness, write raw reps and trace with sidecars, return the reps table."""
    outputs = [p for p in (args.out, args.trace_out) if p]
    ensure_absent(*outputs)
    gpus = [] if target.gpu_index is None else [target.gpu_index]
    started = provenance.begin(
        gpus,
        target.profile["name"],
        args.config_hash,
        {"device_mismatch": target.device_mismatch, "workload": describe},
    )
    source = open_source(gpus or None)
    try:
        result = harness.measure(source, telemetry_settings(args), prepare)
    finally:
        source.close()
    reps = attach(result.reps, result.trace.frame)
    for key, value in reversed(describe.items()):
        reps.insert(0, key, value)
    reps.insert(0, "device", source.devices()[0])
    reps.insert(0, "profile", target.profile["name"])
    record = provenance.finish(started, {"measurement": result.summary()})
    if args.out:
        write_raw(reps, args.out, record)
    else:
        reps.to_csv(sys.stdout, index=False)
    if args.trace_out:
        write_raw(result.trace.frame, args.trace_out, record)
    _report(result, reps)
    return reps


def _report(result: harness.Measurement, reps: pd.DataFrame) -> None:
    """A short human summary on stderr (the log), next to the raw files."""
    summary = result.summary()
    print(
        f"telemetry: {summary['telemetry']['achieved_rate_hz']:.1f} Hz achieved "
        f"({summary['telemetry']['requested_rate_hz']:g} requested); cool-down {result.cooldown.status} "
        f"after {result.cooldown.waited_s:.0f} s",
        file=sys.stderr,
    )
    for device, idle in result.idle.items():
        print(
            f"idle {device}: {idle.power_w:.1f} W ({idle.method}), {idle.temperature_c:.0f} C",
            file=sys.stderr,
        )
    for device, energy in result.energy.items():
        print(
            f"energy {device}: {energy.operations} ops in {energy.window.duration_s:.1f} s, "
            f"{energy.window.avg_power_w:.1f} W, {energy.per_op_j:.4g} J/op gross, "
            f"{energy.per_op_above_idle_j:.4g} J/op above idle",
            file=sys.stderr,
        )
    if result.energy_note:
        print(result.energy_note, file=sys.stderr)
    throttled = int(reps["throttled"].sum())
    print(f"reps: median {reps['ms'].median():.3f} ms, {throttled} of {len(reps)} throttled", file=sys.stderr)
