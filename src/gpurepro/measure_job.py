"""What every measuring subcommand does around its workload: resolve the profile, check the GPU against
it, refuse to overwrite results, record provenance, run the shared harness and write the raw files.

A job takes its settings as the dataclasses below, which the commands build from their options: the job
runs the same whether a command line, a test or a benchmark asked for it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import harness, host, nvml, plausibility, provenance
from .errors import GpureproError
from .profiles import check_gpu_matches, load_profile, pick_profile
from .profiling.dcgm import dcgm_out_path, monitor_if_requested
from .results import ensure_absent, write_raw
from .telemetry import SAMPLE_COLUMNS, open_source
from .telemetry.align import attach


@dataclass(frozen=True)
class JobFiles:
    """Where a job files what it measured, and the workflow's config hash its provenance records."""

    out: str | Path | None  # the raw table, one row per rep; None: printed to stdout
    trace_out: str | Path | None = None  # the telemetry trace; None: not written
    config_hash: str = ""


@dataclass(frozen=True)
class JobSettings:
    """How a measuring job runs around its workload: its files, the harness's telemetry, DCGM beside it
    and where the process runs."""

    files: JobFiles
    telemetry: harness.TelemetrySettings = field(default_factory=harness.TelemetrySettings)
    # DCGM metrics file: a path, or 'auto' for <stem>.dcgm.csv beside the trace; None: not sampled
    dcgm_out: str | None = None
    pin: str = "auto"  # host.PIN_MODES: on the CPUs nearest the GPU, or left where it is
    # torch's threads where they are not the job's: a placed job that keeps the host to itself holds every
    # core to keep other jobs off it, and measures with the threads the one-GPU plan gives its point
    torch_threads: int | None = None


@dataclass(frozen=True)
class Target:
    """Where a job runs: a GPU index or the CPU, and the profile its results are filed under."""

    gpu_index: int | None  # NVML's (the host's) index: telemetry, provenance and file names use it
    profile: dict[str, Any]
    device_mismatch: str | None
    visible_index: int | None = None  # CUDA's index of the GPU where it differs from NVML's (below)

    @property
    def cuda_index(self) -> int | None:
        """The index CUDA (torch, the kernels) knows the GPU by."""
        return self.gpu_index if self.visible_index is None else self.visible_index

    @property
    def torch_device(self) -> str:
        return "cpu" if self.gpu_index is None else f"cuda:{self.cuda_index}"

    @property
    def where(self) -> str:
        """How messages name it: 'GPU 1' (the host's index) or 'CPU'."""
        return "CPU" if self.gpu_index is None else f"GPU {self.gpu_index}"


def _visible_entries(visible: str | None) -> list[str]:
    return [entry.strip() for entry in (visible or "").split(",") if entry.strip()]


def uuid_position(visible: str | None, nvml_uuid: str) -> int | None:
    """Where CUDA_VISIBLE_DEVICES names this GPU by its UUID: CUDA's index for it (a campaign's node job
    gives each of its processes only its own GPU so, and keeps the host's index for NVML), else None."""
    for position, entry in enumerate(_visible_entries(visible)):
        if entry.startswith("GPU-") and nvml_uuid.startswith(entry):
            return position
    return None


def visible_device_mismatch(index: int, visible: str | None, nvml_count: int, nvml_uuid: str) -> str | None:
    """Why CUDA's GPU `index` may not be NVML's GPU `index` (None when they are the same GPU).

    A job passes one index to CUDA (torch, the kernels) and to NVML (telemetry, energy). CUDA numbers only
    the GPUs CUDA_VISIBLE_DEVICES lists; NVML ignores the variable. They agree when it is unset; when NVML
    sees just the listed GPUs (a scheduler that hides the others from the job, as SLURM does with
    ConstrainDevices=yes), in the same order; when entry `index` names NVML's GPU `index`; or when an entry
    names NVML's GPU `index` by its UUID, CUDA's index being then that entry's place (uuid_position).
    """
    if visible is None or uuid_position(visible, nvml_uuid) is not None:
        return None
    entries = _visible_entries(visible)
    if index >= len(entries):
        return f"CUDA_VISIBLE_DEVICES='{visible}' leaves CUDA {len(entries)} GPU(s): there is no GPU {index}"
    entry = entries[index]
    if entry.startswith("GPU-"):
        if nvml_uuid.startswith(entry):
            return None
    elif entry.isdigit():
        numbers = [int(e) for e in entries if e.isdigit()]
        if int(entry) == index or (len(entries) == nvml_count and numbers == sorted(numbers)):
            return None
    else:  # MIG instances and other forms: nothing to compare
        return None
    return (
        f"CUDA_VISIBLE_DEVICES='{visible}' makes CUDA's GPU {index} the GPU '{entry}', but NVML, which reads "
        f"power and energy, sees all {nvml_count} GPUs and would read its GPU {index}, another one. Let the "
        "scheduler hide the other GPUs from the job (SLURM: ConstrainDevices=yes in cgroup.conf), or unset "
        "CUDA_VISIBLE_DEVICES and pass the GPU's NVML index"
    )


def resolve_target(gpu: int | str, profile_name: str | None, device_check: str) -> Target:
    """Pick or load the profile and stop (or warn) when the GPU found is not its model, or when CUDA and
    NVML would not be measuring the same GPU."""
    gpu_index = None if gpu == "cpu" else int(gpu)
    info, visible_index = None, None
    if gpu_index is not None:
        try:
            with nvml.session():
                info = nvml.gpu_info(gpu_index)
                count = nvml.device_count()
        except nvml.NvmlUnavailable as err:
            raise GpureproError(f"cannot measure on GPU {gpu_index}: {err}") from err
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        mismatch = visible_device_mismatch(gpu_index, visible, count, info.uuid)
        if mismatch:
            raise GpureproError(mismatch)
        visible_index = uuid_position(visible, info.uuid)
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
    return Target(gpu_index, profile, mismatch, visible_index)


def _begin(files: JobFiles, target: Target, describe: dict[str, Any]) -> dict[str, Any]:
    """The provenance known before measuring: the GPU's state now, the config hash, the workload."""
    gpus = [] if target.gpu_index is None else [target.gpu_index]
    extra = {"device_mismatch": target.device_mismatch, "workload": describe}
    return provenance.begin(gpus, target.profile["name"], files.config_hash, extra)


def run_job(
    settings: JobSettings,
    target: Target,
    describe: dict[str, Any],
    prepare: Callable[[], harness.Workload],
) -> pd.DataFrame:
    """Measure with the shared harness, write raw reps and trace with sidecars, return the reps table."""
    files = settings.files
    dcgm_path = dcgm_out_path(settings.dcgm_out, files.trace_out, files.out)
    outputs = [p for p in (files.out, files.trace_out, dcgm_path) if p]
    ensure_absent(*outputs)
    # Here, in the job's own process (after the fork server's fork), before the workload is built: what
    # it starts from now on (the sampler, a kernel binary, HFTA's workers) runs on the same CPUs.
    pinning = host.pin_for_gpu(settings.pin, target.gpu_index, settings.torch_threads)
    print(f"host: {pinning.note}", file=sys.stderr)
    started = _begin(files, target, describe)
    gpus = [] if target.gpu_index is None else [target.gpu_index]
    source = open_source(gpus or None)
    try:
        with monitor_if_requested(gpus, dcgm_path) as dcgm:  # DCGM metrics beside the telemetry, if any
            result = harness.measure(source, settings.telemetry, prepare)
    finally:
        source.close()
    reps = attach(result.reps, result.trace.frame)
    # Before anything is filed: a figure the GPU cannot reach was timed somewhere else.
    what = f"{target.where} " + ", ".join(f"{key} {value}" for key, value in describe.items())
    plausibility.check_reps(reps, provenance.gpu_name(started), what)
    for key, value in reversed(describe.items()):
        reps.insert(0, key, value)
    reps.insert(0, "device", source.devices()[0])
    reps.insert(0, "profile", target.profile["name"])
    record = provenance.finish(started, {"measurement": result.summary(), "dcgm": dcgm})
    if files.out:
        write_raw(reps, files.out, record)
    else:
        reps.to_csv(sys.stdout, index=False)
    if files.trace_out:
        write_raw(result.trace.frame, files.trace_out, record)
    _report(result, reps)
    return reps


def record_failure(
    files: JobFiles, target: Target, describe: dict[str, Any], reason: str, status: str = "failed"
) -> int:
    """A point that cannot be measured here (out of memory, a compiler error, a tool that is absent): one
    row with its status (`failed` unless a study tells them apart: `oom`, `skipped`) and the reason, and an
    empty trace, each with a provenance sidecar, so a sweep files the point and goes on. Returns the exit
    status: 0 once recorded in --out, 1 without --out."""
    print(f"point {status}: {reason}", file=sys.stderr)
    if not files.out:
        return 1
    record = provenance.finish(_begin(files, target, describe), {status: reason})
    device = "cpu" if target.gpu_index is None else str(target.gpu_index)
    row = {
        "profile": target.profile["name"],
        "device": device,
        **describe,
        "status": status,
        "reason": reason,
    }
    write_raw(pd.DataFrame([row]), files.out, record)
    if files.trace_out:
        write_raw(pd.DataFrame(columns=[*SAMPLE_COLUMNS, "phase"]), files.trace_out, record)
    print(f"recorded as {status} in {files.out}", file=sys.stderr)
    return 0


def _report(result: harness.Measurement, reps: pd.DataFrame) -> None:
    """A short human summary on stderr (the log), next to the raw files."""
    telemetry = result.summary()["telemetry"]
    phases = ", ".join(f"{name} {rate:.1f}" for name, rate in telemetry["achieved_rate_hz_by_phase"].items())
    print(
        f"telemetry: {telemetry['achieved_rate_hz']:.1f} Hz achieved ({telemetry['requested_rate_hz']:g} "
        f"requested; by phase: {phases or 'none long enough'}), {telemetry['dropped_samples']} dropped, "
        f"{telemetry['sampler']} sampler started in {telemetry['sampler_start_s']:.2f} s, latest wake-up "
        f"{telemetry['sampler_latest_wake_s'] * 1e3:.1f} ms, slowest read "
        f"{telemetry['sampler_slowest_read_s'] * 1e3:.1f} ms, {telemetry['sampler_energy_readings']} energy "
        f"readings apart (slowest {telemetry['sampler_slowest_energy_read_s'] * 1e3:.1f} ms), niceness "
        f"{telemetry['sampler_niceness']}; "
        f"cool-down {result.cooldown.status} after {result.cooldown.waited_s:.0f} s",
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
