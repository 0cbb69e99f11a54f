"""Energy windows from hardware counters and the idle-power baseline (after Zeus's begin/end windows).

NVML's total-energy counter (Volta and newer) updates about every 100 ms, so a window must last seconds
to be right; windows shorter than `min_window_s` are flagged unreliable rather than silently reported.
Where no counter exists (pre-Volta GPUs, CPUs without readable RAPL) energy is NaN and the window says why.

Each edge of a window is taken at one of the counter's updates. The counter holds its value between
updates (on an H100 every 100.0 ms, 97-103 ms: benchmarks/energy_counter_edges.py), so a window opened
and closed at arbitrary instants counts whole updates while its wall time runs on: whenever closing it
passes an update that opening it did not, one more update's energy falls in, 100 ms of it over 3 s,
+3.3% (about 4-5 W at an H100's active idle or at eager batch 1). A window closes after the instant it
was due (sleep's overrun, the last operation), 6-30 ms in quick runs on H100s, so that happened to about
one window in ten: 14 of 123 inference processes of seven runs read 3-6 W off their point's others, the
processes with the longest closes the most often. Waiting for the counter to change at each edge makes
the energy and the wall time span the same updates.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
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


# The longest an edge waits for the counter to change: a few of its updates. A counter that does not
# change in that time (one that stalls, a RAPL file nothing writes) gives the edge at the wait's end.
UPDATE_WAIT_S = 0.3
# Each device's (instant, joules) at an update of its counter (their counters update on their own), or
# None where the source has no counter.
Edges = dict[str, tuple[float, float]] | None


class EnergyMeter:
    """Named energy windows over every device of a source, each edge at an update of that device's
    counter."""

    def __init__(self, source: TelemetrySource, min_window_s: float = 3.0) -> None:
        self.source = source
        self.min_window_s = min_window_s
        self._open: dict[str, tuple[float, Edges]] = {}  # name -> when it was asked for, its opening

    @property
    def method(self) -> str:
        if self.source.energy_j() is None:
            return "unavailable"
        return "nvml_energy_counter" if self.source.kind == "nvml" else "rapl"

    def at_update(self, between: Callable[[], object] | None = None) -> Edges:
        """Each device's (instant, joules) at its counter's next change: the counters are read again and
        again, with `between` (one operation, to keep a device at its work) before each read; a change
        fell between the read before it and the read that saw it, so its instant is taken halfway. A
        device whose counter does not change within UPDATE_WAIT_S gets the reading as it then stands;
        None where there is no counter."""
        first = self.source.energy_j()
        if first is None:
            return None
        edges: dict[str, tuple[float, float]] = {}
        deadline = time.perf_counter() + UPDATE_WAIT_S
        read_at, reading = time.time(), first
        while len(edges) < len(first) and time.perf_counter() < deadline:
            if between is not None:
                between()
            previous, reading = read_at, self.source.energy_j() or reading
            read_at = time.time()
            for device, joules in reading.items():
                if device not in edges and joules != first[device]:
                    edges[device] = ((previous + read_at) / 2, joules)
        return {device: edges.get(device, (read_at, reading[device])) for device in first}

    def begin_window(self, name: str) -> None:
        if name in self._open:
            raise ValueError(f"energy window '{name}' is already open")
        self._open[name] = (time.time(), self.at_update())

    def end_window(self, name: str, closed: Edges = None) -> dict[str, EnergyWindow]:
        """The window's energy per device, up to its counter's next update (or up to `closed`: the
        updates a caller waited for while keeping its device at work, at_update)."""
        opened_at, opened = self._open.pop(name)
        closed = closed if closed is not None else self.at_update()
        windows = {}
        for device in self.source.devices():
            if opened is None or closed is None:
                start, end, energy, method = opened_at, time.time(), math.nan, "unavailable"
                note = (
                    "no energy counter on this device (NVML energy needs Volta or newer; "
                    "CPU energy needs readable RAPL counters)"
                )
                reliable = False
            else:
                (start, before), (end, after) = opened[device], closed[device]
                energy, method = after - before, self.method
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
        time.sleep(seconds)  # the close waits for the counter's next update: the window is this or longer
        windows = meter.end_window("idle")
    frame = sampler.trace.frame  # type: ignore[union-attr]
    return {device: idle_baseline(frame[frame["device"] == device], windows[device]) for device in windows}
