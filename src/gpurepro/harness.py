"""The measurement protocol every study shares, so each measures the same way:

1. cool down (wait until the device's temperature settles), and leave the GPU alone until a few seconds
   after the previous measurement on it ended (cooldown.SETTLE_S: its clocks stay up a moment after the
   last context goes); the cool-down's own wait counts towards those seconds,
2. idle baseline (power and temperature with nothing running), taken before the workload is prepared: a
   process holding a CUDA context keeps an H200 at about 125 W instead of its 80 W idle. After a
   cool-down of idle_seconds or more, the baseline is its last idle_seconds (the device was at rest with
   no context, at the temperature the work starts from), read from the sampled energy counter; otherwise
   a window of its own,
3. for workloads that ask for it (inference), an active idle after the workload is prepared: context up,
   model built and warm, device at rest, in an energy window of its own. On a GPU that holds a context at
   full clocks (about 55 W above true idle on an H100, about 3 W on an A100), power above the idle of
   step 2 is mostly that floor; power above the active idle is what the work itself adds,
4. timed repetitions with the telemetry sampler running beside them, in a process of its own by default
   (telemetry/process.py), so it takes no time from the measured interpreter,
5. a separate energy window: the operation back to back for at least `min_energy_window_s`, because
   NVML's energy counter updates only about every 100 ms (skipped, and said so, where there is no counter).
   Workloads run by another process (the CUDA kernels) have no operation to repeat from Python; their
   energy is the counter's rise over the span of their reps, read from the trace: the timed reps when they
   last long enough, else a further run of enough reps.

Steps 4 and 5 each run inside one `Workload.region()` (e.g. one autocast region whose weight-cast cache
lasts the whole block, as the inference artifact timed its model). The sidecar gets every window, and
the median SM clock, memory clock and utilisation of the samples in the idle, active-idle and energy
windows, so a power difference can be read beside the clocks it was drawn at.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .telemetry import (
    COOLDOWN_MARGIN_C,
    DEFAULT_SAMPLER,
    IDLE_TAIL_MARGIN_S,
    PLATEAU_S,
    SETTLE_S,
    CooldownResult,
    EnergyMeter,
    EnergyWindow,
    IdleBaseline,
    TelemetrySource,
    Trace,
    cooldown_levels,
    idle_baseline,
    idle_temperatures,
    last_end,
    measuring,
    open_sampler,
    record_level,
    settle,
    wait_for_cooldown,
    window_from_trace,
)

# Phases shorter than this get no achieved rate of their own: a second holds enough sample periods for
# the rate to be within a few percent at the default 50 Hz.
MIN_RATE_PHASE_S = 1.0
# The sidecar's per-window medians: (name in the sidecar, trace column).
WINDOW_MEDIANS = {
    "sm_clock_mhz": "sm_clock_mhz",
    "memory_clock_mhz": "mem_clock_mhz",
    "utilization_pct": "util_pct",
}


@dataclass(frozen=True)
class TelemetrySettings:
    rate_hz: float = 50.0
    idle_seconds: float = 5.0
    min_energy_window_s: float = 3.0
    cooldown_max_wait_s: float = 120.0
    # where each GPU's idle temperature at the start of the run is kept (telemetry/cooldown.py); None:
    # the cool-down waits for a plateau only
    idle_temperature_dir: Path | None = None
    sampler: str = DEFAULT_SAMPLER  # "process" or "thread" (telemetry.samplers)
    # Seconds of active idle, for workloads that ask for it: several energy-counter updates (about every
    # 100 ms), and sub-windows enough for an interval on the power above it.
    active_idle_seconds: float = 3.0


@dataclass(frozen=True)
class Workload:
    """What a study hands the harness: its timed repetitions (one row per rep, with host wall-clock bounds
    t_start_unix_s / t_end_unix_s), one operation for the energy window, and a device synchronisation."""

    timed_reps: Callable[[], pd.DataFrame]
    operation: Callable[[], None] | None
    synchronize: Callable[[], None]
    # For workloads without an operation: run this many reps again (same table as timed_reps).
    energy_reps: Callable[[int], pd.DataFrame] | None = None
    # Measure an active idle after prepare (TelemetrySettings.active_idle_seconds); off by default, so the
    # studies that do not report power above it take no longer.
    active_idle: bool = False
    # Entered once around the timed reps and once around the energy window, with the operation called
    # inside (e.g. one autocast region with its cast cache, inference/modes.py).
    region: Callable[[], AbstractContextManager[Any]] = nullcontext


@dataclass(frozen=True)
class EnergyResult:
    """Energy of back-to-back operations: gross per operation, above the idle baseline and above the
    active idle (NaN where the workload measured none)."""

    window: EnergyWindow
    operations: int
    idle_power_w: float
    active_idle_power_w: float = math.nan

    def _per_op_above(self, power_w: float) -> float:
        rest_energy = power_w * self.window.duration_s
        return (self.window.energy_j - rest_energy) / self.operations if self.operations else math.nan

    @property
    def per_op_j(self) -> float:
        return self._per_op_above(0.0)

    @property
    def per_op_above_idle_j(self) -> float:
        return self._per_op_above(self.idle_power_w)

    @property
    def per_op_above_active_idle_j(self) -> float:
        return self._per_op_above(self.active_idle_power_w)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.window.as_dict(),
            "operations": self.operations,
            "idle_power_w": self.idle_power_w,
            "active_idle_power_w": self.active_idle_power_w,
            "energy_per_op_j": self.per_op_j,
            "energy_per_op_above_idle_j": self.per_op_above_idle_j,
            "energy_per_op_above_active_idle_j": self.per_op_above_active_idle_j,
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
    active_idle: dict[str, IdleBaseline] = field(default_factory=dict)  # empty: the workload asked for none
    # device -> window (idle, active_idle, energy) -> WINDOW_MEDIANS name -> median of its samples
    window_medians: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The window-level facts that go into the provenance sidecar."""
        return {
            "cooldown": self.cooldown.as_dict(),
            "idle": {device: idle.as_dict() for device, idle in self.idle.items()},
            "active_idle": {device: rest.as_dict() for device, rest in self.active_idle.items()},
            "window_medians": self.window_medians,
            "energy": {device: result.as_dict() for device, result in self.energy.items()},
            "energy_note": self.energy_note,
            "telemetry": {**self.trace.describe(), "achieved_rate_hz_by_phase": self.phase_rates_hz},
        }


def run_energy_window(
    meter: EnergyMeter, operation: Callable[[], None], synchronize: Callable[[], None], min_seconds: float
) -> tuple[dict[str, EnergyWindow], int]:
    """Run `operation` back to back for at least min_seconds inside one energy window, which opens and
    closes at updates of the energy counter (telemetry/energy.py): past min_seconds the operations go on
    until the counter next changes, so the device is at its work up to the window's close."""
    synchronize()
    meter.begin_window("energy")
    operations = 0

    def one() -> None:
        nonlocal operations
        operation()
        operations += 1
        if operations % 8 == 0:
            synchronize()  # keep the host from queueing far ahead of the device past the deadline

    deadline = time.perf_counter() + min_seconds
    while time.perf_counter() < deadline:
        one()
    closed = meter.at_update(between=one)
    synchronize()
    return meter.end_window("energy", closed), operations


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


def _rest(
    phases: _Phases, meter: EnergyMeter, name: str, seconds: float, synchronize: Callable[[], None]
) -> dict[str, EnergyWindow]:
    """Phase and energy window `name`: the device at rest for `seconds`, after its queued work is done."""
    with phases.phase(name):
        synchronize()
        meter.begin_window(name)
        time.sleep(seconds)  # the close waits for the counter's next update: the window is this or longer
        return meter.end_window(name)


def _window_samples(frame: pd.DataFrame, window: EnergyWindow) -> pd.DataFrame:
    """The samples of the window's device taken inside it."""
    times = frame["time_unix_s"]
    inside = (times >= window.start_unix_s) & (times <= window.end_unix_s)
    return frame[inside & (frame["device"] == window.device)]


def _baselines(frame: pd.DataFrame, windows: dict[str, EnergyWindow]) -> dict[str, IdleBaseline]:
    return {
        device: idle_baseline(_window_samples(frame, window), window) for device, window in windows.items()
    }


def _window_medians(
    frame: pd.DataFrame, windows_by_name: dict[str, dict[str, EnergyWindow]]
) -> dict[str, dict[str, dict[str, float]]]:
    """Per device and window, the median of each WINDOW_MEDIANS column over the window's samples."""
    medians: dict[str, dict[str, dict[str, float]]] = {}
    for name, windows in windows_by_name.items():
        for device, window in windows.items():
            samples = _window_samples(frame, window)
            medians.setdefault(device, {})[name] = {
                key: float(samples[column].median()) for key, column in WINDOW_MEDIANS.items()
            }
    return medians


def measure(
    source: TelemetrySource, settings: TelemetrySettings, prepare: Callable[[], Workload]
) -> Measurement:
    """Cool down, then under one telemetry sampler: idle baseline, prepare the workload, active idle
    (where the workload asks for it), timed reps, energy window.

    One sampler covers the whole job, so the saved trace shows idle, work and energy phases side by side
    (column `phase`)."""
    recorded = idle_temperatures(source, settings.idle_temperature_dir)
    targets = {device: temperature + COOLDOWN_MARGIN_C for device, temperature in recorded.items()}
    meter = EnergyMeter(source, settings.min_energy_window_s)
    phases = _Phases()
    energy: dict[str, EnergyResult] = {}
    windows: dict[str, EnergyWindow] = {}
    active_windows: dict[str, EnergyWindow] = {}
    note = (
        ""
        if meter.method != "unavailable"
        else "energy not measured: this device has no readable energy counter"
    )
    with (
        measuring(source, settings.idle_temperature_dir),
        open_sampler(source, settings.rate_hz, settings.sampler) as sampler,
    ):
        with phases.phase("cooldown"):
            previous_end = last_end(source, settings.idle_temperature_dir)
            cooldown = wait_for_cooldown(
                source,
                settings.cooldown_max_wait_s,
                targets or None,
                PLATEAU_S,
                level_temp_c=cooldown_levels(source, settings.idle_temperature_dir),
            )
            record_level(source, settings.idle_temperature_dir, cooldown, targets)
            cooled_at = time.time()
            cooldown = replace(cooldown, settled_s=settle(source, settings.idle_temperature_dir, SETTLE_S))
        # A cool-down at least as long as the idle baseline ended with the device at rest, with no
        # context, for idle_seconds: the state the baseline measures, provided its tail starts after the
        # previous measurement's clocks have come down. That tail is then the baseline (read from the
        # sampled energy counter below), instead of as long again after it.
        idle_tail = (
            cooldown.waited_s >= settings.idle_seconds + IDLE_TAIL_MARGIN_S
            and (previous_end is None or cooled_at - settings.idle_seconds >= previous_end + SETTLE_S)
            and meter.method != "unavailable"
        )
        idle_windows = {} if idle_tail else _rest(phases, meter, "idle", settings.idle_seconds, lambda: None)
        with phases.phase("prepare"):
            workload = prepare()
        if workload.active_idle:
            active_windows = _rest(
                phases, meter, "active_idle", settings.active_idle_seconds, workload.synchronize
            )
        with phases.phase("reps"), workload.region():
            reps = workload.timed_reps()
        if not note:
            with phases.phase("energy"), workload.region():
                if workload.operation is not None:
                    windows, operations = run_energy_window(
                        meter, workload.operation, workload.synchronize, settings.min_energy_window_s
                    )
                else:
                    span_reps = _reps_spanning(workload, reps, settings.min_energy_window_s)
    trace = sampler.trace
    assert trace is not None
    trace.frame["phase"] = phases.label(trace.frame["time_unix_s"])
    if idle_tail:
        idle_windows = {
            device: window_from_trace(
                trace.frame, device, cooled_at - settings.idle_seconds, cooled_at, meter.method, 0.0
            )
            for device in source.devices()
        }
    idle = _baselines(trace.frame, idle_windows)
    active_idle = _baselines(trace.frame, active_windows)
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
            device: EnergyResult(
                window,
                operations,
                idle[device].power_w,
                active_idle[device].power_w if device in active_idle else math.nan,
            )
            for device, window in windows.items()
        }
    medians = _window_medians(
        trace.frame, {"idle": idle_windows, "active_idle": active_windows, "energy": windows}
    )
    return Measurement(
        reps, trace, cooldown, idle, energy, note, phases.rates_hz(trace), active_idle, medians
    )
