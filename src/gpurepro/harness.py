"""The measurement protocol every study shares, so each measures the same way:

1. cool down (wait until the device's temperature settles),
2. idle baseline (power and temperature with nothing running), taken before the workload is prepared: a
   process holding a CUDA context keeps an H200 at about 125 W instead of its 80 W idle,
3. timed repetitions with the telemetry sampler running beside them, in a process of its own by default
   (telemetry/process.py), so it takes no time from the measured interpreter,
4. a separate energy window: the operation back to back for at least `min_energy_window_s`, because
   NVML's energy counter updates only about every 100 ms (skipped, and said so, where there is no counter).
   Workloads run by another process (the CUDA kernels) have no operation to repeat from Python; their
   energy is the counter's rise over the span of their reps, read from the trace: the timed reps when they
   last long enough, else a further run of enough reps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .telemetry import (
    DEFAULT_SAMPLER,
    CooldownResult,
    EnergyMeter,
    EnergyWindow,
    IdleBaseline,
    TelemetrySource,
    Trace,
    idle_baseline,
    open_sampler,
    wait_for_cooldown,
    window_from_trace,
)

# Phases shorter than this get no achieved rate of their own: a second holds enough sample periods for
# the rate to be within a few percent at the default 50 Hz.
MIN_RATE_PHASE_S = 1.0


@dataclass(frozen=True)
class TelemetrySettings:
    rate_hz: float = 50.0
    idle_seconds: float = 5.0
    min_energy_window_s: float = 3.0
    cooldown_max_wait_s: float = 120.0
    sampler: str = DEFAULT_SAMPLER  # "process" or "thread" (telemetry.samplers)


@dataclass(frozen=True)
class Workload:
    """What a study hands the harness: its timed repetitions (one row per rep, with host wall-clock bounds
    t_start_unix_s / t_end_unix_s), one operation for the energy window, and a device synchronisation."""

    timed_reps: Callable[[], pd.DataFrame]
    operation: Callable[[], None] | None
    synchronize: Callable[[], None]
    # For workloads without an operation: run this many reps again (same table as timed_reps).
    energy_reps: Callable[[int], pd.DataFrame] | None = None


@dataclass(frozen=True)
class EnergyResult:
    """Energy of back-to-back operations: gross per operation and above the idle baseline."""

    window: EnergyWindow
    operations: int
    idle_power_w: float

    @property
    def per_op_j(self) -> float:
        return self.window.energy_j / self.operations if self.operations else math.nan

    @property
    def per_op_above_idle_j(self) -> float:
        idle_energy = self.idle_power_w * self.window.duration_s
        return (self.window.energy_j - idle_energy) / self.operations if self.operations else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.window.as_dict(),
            "operations": self.operations,
            "idle_power_w": self.idle_power_w,
            "energy_per_op_j": self.per_op_j,
            "energy_per_op_above_idle_j": self.per_op_above_idle_j,
        }


@dataclass(frozen=True)
class Measurement:
    reps: pd.DataFrame
    trace: Trace
    cooldown: CooldownResult
    idle: dict[str, IdleBaseline]
    energy: dict[str, EnergyResult]
    energy_note: str
    phase_rates_hz: dict[str, float]  # achieved sampling rate per phase (idle, prepare, reps, energy)

    def summary(self) -> dict[str, Any]:
        """The window-level facts that go into the provenance sidecar."""
        return {
            "cooldown": self.cooldown.as_dict(),
            "idle": {device: idle.as_dict() for device, idle in self.idle.items()},
            "energy": {device: result.as_dict() for device, result in self.energy.items()},
            "energy_note": self.energy_note,
            "telemetry": {**self.trace.describe(), "achieved_rate_hz_by_phase": self.phase_rates_hz},
        }


def run_energy_window(
    meter: EnergyMeter, operation: Callable[[], None], synchronize: Callable[[], None], min_seconds: float
) -> tuple[dict[str, EnergyWindow], int]:
    """Run `operation` back to back for at least min_seconds inside one energy window."""
    synchronize()
    meter.begin_window("energy")
    operations = 0
    deadline = time.perf_counter() + min_seconds
    while time.perf_counter() < deadline:
        operation()
        operations += 1
        if operations % 8 == 0:
            synchronize()  # keep the host from queueing far ahead of the device past the deadline
    synchronize()
    return meter.end_window("energy"), operations


def _span_s(reps: pd.DataFrame) -> float:
    return float(reps["t_end_unix_s"].max() - reps["t_start_unix_s"].min())


def _reps_spanning(workload: Workload, reps: pd.DataFrame, min_seconds: float) -> pd.DataFrame:
    """The timed reps if they span the energy window, else a further run of enough reps to span it."""
    if _span_s(reps) >= min_seconds or workload.energy_reps is None:
        return reps
    per_rep_s = max(float(reps["ms"].median()) / 1e3, 1e-6)
    return workload.energy_reps(math.ceil(1.2 * min_seconds / per_rep_s))


class _Phases:
    """Wall-clock intervals of the job's phases, to label every telemetry sample with the phase it fell in."""

    def __init__(self) -> None:
        self.intervals: list[tuple[str, float, float]] = []

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.time()
        try:
            yield
        finally:
            self.intervals.append((name, start, time.time()))

    def rates_hz(self, trace: Trace) -> dict[str, float]:
        """The sampler's achieved rate in each phase that lasted MIN_RATE_PHASE_S or longer."""
        return {
            name: trace.rate_between(start, end)
            for name, start, end in self.intervals
            if end - start >= MIN_RATE_PHASE_S
        }

    def label(self, times: pd.Series) -> pd.Series:
        labels = pd.Series("between", index=times.index)
        for name, start, end in self.intervals:
            labels[(times >= start) & (times <= end)] = name
        return labels


def measure(
    source: TelemetrySource, settings: TelemetrySettings, prepare: Callable[[], Workload]
) -> Measurement:
    """Cool down, then under one telemetry sampler: idle baseline, prepare the workload, timed reps,
    energy window.

    One sampler covers the whole job, so the saved trace shows idle, work and energy phases side by side
    (column `phase`)."""
    cooldown = wait_for_cooldown(source, max_wait_s=settings.cooldown_max_wait_s)
    meter = EnergyMeter(source, settings.min_energy_window_s)
    phases = _Phases()
    energy: dict[str, EnergyResult] = {}
    note = (
        ""
        if meter.method != "unavailable"
        else "energy not measured: this device has no readable energy counter"
    )
    with open_sampler(source, settings.rate_hz, settings.sampler) as sampler:
        with phases.phase("idle"):
            meter.begin_window("idle")
            time.sleep(settings.idle_seconds)
            idle_windows = meter.end_window("idle")
        with phases.phase("prepare"):
            workload = prepare()
        with phases.phase("reps"):
            reps = workload.timed_reps()
        if not note:
            with phases.phase("energy"):
                if workload.operation is not None:
                    windows, operations = run_energy_window(
                        meter, workload.operation, workload.synchronize, settings.min_energy_window_s
                    )
                else:
                    span_reps = _reps_spanning(workload, reps, settings.min_energy_window_s)
    trace = sampler.trace
    assert trace is not None
    trace.frame["phase"] = phases.label(trace.frame["time_unix_s"])
    idle_samples = trace.frame[trace.frame["phase"] == "idle"]
    idle = {
        device: idle_baseline(idle_samples[idle_samples["device"] == device], window)
        for device, window in idle_windows.items()
    }
    if not note and workload.operation is None:
        start, end = float(span_reps["t_start_unix_s"].min()), float(span_reps["t_end_unix_s"].max())
        windows = {
            device: window_from_trace(
                trace.frame, device, start, end, meter.method, settings.min_energy_window_s
            )
            for device in source.devices()
        }
        operations = len(span_reps)
    if not note:
        energy = {
            device: EnergyResult(window, operations, idle[device].power_w)
            for device, window in windows.items()
        }
    return Measurement(reps, trace, cooldown, idle, energy, note, phases.rates_hz(trace))
