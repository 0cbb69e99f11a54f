"""Energy windows from hardware counters and the idle-power baseline (after Zeus's begin/end windows).

NVML's total-energy counter (Volta and newer) updates about every 100 ms, so a window must last seconds
to be right; windows shorter than `min_window_s` are flagged unreliable rather than silently reported.
Where no counter exists (pre-Volta GPUs, CPUs without readable RAPL) energy is NaN and the window says why.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .samplers import DEFAULT_SAMPLER, open_sampler
from .sources import TelemetrySource


@dataclass(frozen=True)
class EnergyWindow:
    """Energy one device used between begin_window and end_window."""

    device: str
    start_unix_s: float
    end_unix_s: float
    energy_j: float
    method: str  # "nvml_energy_counter", "rapl", or "unavailable"
    reliable: bool
    note: str

    @property
    def duration_s(self) -> float:
        return self.end_unix_s - self.start_unix_s

    @property
    def avg_power_w(self) -> float:
        return self.energy_j / self.duration_s if self.duration_s > 0 else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duration_s": self.duration_s, "avg_power_w": self.avg_power_w}


class EnergyMeter:
    """Named energy windows over every device of a source."""

    def __init__(self, source: TelemetrySource, min_window_s: float = 3.0) -> None:
        self.source = source
        self.min_window_s = min_window_s
        self._open: dict[str, tuple[float, dict[str, float] | None]] = {}

    @property
    def method(self) -> str:
        if self.source.energy_j() is None:
            return "unavailable"
        return "nvml_energy_counter" if self.source.kind == "nvml" else "rapl"

    def begin_window(self, name: str) -> None:
        if name in self._open:
            raise ValueError(f"energy window '{name}' is already open")
        self._open[name] = (time.time(), self.source.energy_j())

    def end_window(self, name: str) -> dict[str, EnergyWindow]:
        start, before = self._open.pop(name)
        after = self.source.energy_j()
        end = time.time()
        windows = {}
        for device in self.source.devices():
            if before is None or after is None:
                energy, method = math.nan, "unavailable"
                note = (
                    "no energy counter on this device (NVML energy needs Volta or newer; "
                    "CPU energy needs readable RAPL counters)"
                )
                reliable = False
            else:
                energy, method = after[device] - before[device], self.method
                reliable = end - start >= self.min_window_s
                note = (
                    ""
                    if reliable
                    else (
                        f"window {end - start:.2f} s is shorter than {self.min_window_s} s; "
                        "the counter updates about every 100 ms, so this value is coarse"
                    )
                )
            windows[device] = EnergyWindow(device, start, end, energy, method, reliable, note)
        return windows


def _counter_readings(samples: pd.DataFrame, device: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(times, joules) of one device's energy counter readings in a trace; None with fewer than two, which
    cannot be interpolated."""
    mine = samples[(samples["device"].astype(str) == device) & samples["energy_j"].notna()]
    if len(mine) < 2:
        return None
    return mine["time_unix_s"].to_numpy(dtype=float), mine["energy_j"].to_numpy(dtype=float)


def window_from_trace(
    samples: pd.DataFrame,
    device: str,
    start_unix_s: float,
    end_unix_s: float,
    method: str,
    min_window_s: float,
) -> EnergyWindow:
    """Energy between two instants from the energy counter column of a sampled trace, interpolated
    between samples. For work whose boundaries another process reports (a CUDA binary's per-rep
    timestamps), where begin_window/end_window cannot be called at the right moments."""
    readings = _counter_readings(samples, device)
    if readings is None:
        return EnergyWindow(
            device,
            start_unix_s,
            end_unix_s,
            math.nan,
            "unavailable",
            False,
            "no energy counter readings in the trace",
        )
    times, energy = readings
    joules = float(np.interp(end_unix_s, times, energy) - np.interp(start_unix_s, times, energy))
    reliable = end_unix_s - start_unix_s >= min_window_s
    note = (
        ""
        if reliable
        else (
            f"window {end_unix_s - start_unix_s:.2f} s is shorter than {min_window_s} s; "
            "the counter updates about every 100 ms, so this value is coarse"
        )
    )
    return EnergyWindow(device, start_unix_s, end_unix_s, joules, method, reliable, note)


def subwindow_powers(
    samples: pd.DataFrame, device: str, start_unix_s: float, end_unix_s: float, width_s: float = 0.5
) -> np.ndarray:
    """Average power of each whole `width_s` sub-window of [start, end] from the trace's energy counter,
    interpolated at the sub-window bounds as in window_from_trace: a sample of powers whose spread gives
    a window's average an interval. Empty where the trace has no counter readings or the window is
    shorter than one sub-window; a last, partial sub-window is left out."""
    readings = _counter_readings(samples, device)
    count = int((end_unix_s - start_unix_s) // width_s) if width_s > 0 else 0
    if readings is None or count < 1:
        return np.empty(0)
    bounds = start_unix_s + width_s * np.arange(count + 1)
    return np.diff(np.interp(bounds, *readings)) / width_s


@dataclass(frozen=True)
class IdleBaseline:
    """Power and temperature of a device at rest: before the workload exists (idle), or with the workload
    built and warm in a live context (active idle)."""

    device: str
    power_w: float
    temperature_c: float
    seconds: float
    method: str
    # The window's bounds, so its samples can be found in the trace again (sub-window powers).
    start_unix_s: float = math.nan
    end_unix_s: float = math.nan

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def idle_baseline(samples: pd.DataFrame, window: EnergyWindow) -> IdleBaseline:
    """Idle power from the energy counter where there is one (it averages the whole window), else the
    median of the sampled power; temperature as the median sample."""
    if window.method != "unavailable" and window.duration_s > 0:
        power, method = window.avg_power_w, window.method
    else:
        power, method = float(samples["power_w"].median()), "median_of_samples"
    temperature = float(samples["temperature_c"].median())
    return IdleBaseline(
        window.device, power, temperature, window.duration_s, method, window.start_unix_s, window.end_unix_s
    )


def measure_idle(
    source: TelemetrySource, seconds: float, rate_hz: float, sampler_kind: str = DEFAULT_SAMPLER
) -> dict[str, IdleBaseline]:
    """Sample idle devices for `seconds` and return each one's baseline."""
    meter = EnergyMeter(source, min_window_s=seconds)
    with open_sampler(source, rate_hz, sampler_kind) as sampler:
        meter.begin_window("idle")
        time.sleep(seconds)
        windows = meter.end_window("idle")
    frame = sampler.trace.frame  # type: ignore[union-attr]
    return {device: idle_baseline(frame[frame["device"] == device], windows[device]) for device in windows}
