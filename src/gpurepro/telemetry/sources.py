"""Where telemetry samples come from: NVML for NVIDIA GPUs, psutil and RAPL for the CPU.

Both sources return rows with the same columns, so the sampler, the trace files and the plots do not care
which one ran. Units are in the column names. A value a source cannot read is NaN, never a made-up zero.
Each source also says how to open it again (`spec()`, plain JSON), so the sampling process opens its own.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import psutil

from .. import nvml
from .rapl import RaplMeter

NAN = math.nan

# Columns of one telemetry sample (one row per device per sample).
SAMPLE_COLUMNS = [
    "time_unix_s",
    "device",
    "power_w",
    "power_avg_w",
    "energy_j",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "util_pct",
    "mem_util_pct",
    "clock_event_reasons",
]


class EnergyReading(NamedTuple):
    """One reading of one device's energy counter, with the time.time() instants its call began and
    returned: a slow read is stamped at its midpoint, not at either end."""

    device: str
    began_unix_s: float
    ended_unix_s: float
    joules: float  # NaN where the device has no counter

    @property
    def time_unix_s(self) -> float:
        return (self.began_unix_s + self.ended_unix_s) / 2

    @property
    def seconds(self) -> float:
        return self.ended_unix_s - self.began_unix_s


def timed_reading(device: str, read_joules: Callable[[], float]) -> EnergyReading:
    """One device's counter read by `read_joules`, stamped with the instants around the call."""
    began = time.time()
    joules = read_joules()
    return EnergyReading(device, began, time.time(), joules)


class TelemetrySource(Protocol):
    """A set of devices that can be read many times a second."""

    kind: str  # "nvml" or "cpu"
    # Whether reading the energy counter takes long enough to delay a sample. The sampling process then
    # reads the counter in a thread of its own (worker.py) and every other column without it.
    slow_energy_read: bool

    def devices(self) -> list[str]: ...

    def spec(self) -> dict[str, Any]:
        """How to open this source again in another process (see `source_from_spec`)."""
        ...

    def read(self, energy: bool = True) -> list[dict[str, Any]]:
        """One row per device with SAMPLE_COLUMNS. With energy=False the row leaves the energy counter
        unread (energy_j NaN): a reader of its own takes it (see `slow_energy_read`)."""
        ...

    def energy_j(self) -> dict[str, float] | None:
        """Cumulative energy per device in joules from a hardware counter, or None where there is none."""
        ...

    def energy_readings(self) -> list[EnergyReading]:
        """The energy counter of every device, each reading timed on its own."""
        ...

    def temperature_c(self) -> dict[str, float]:
        """Current temperature per device (NaN where not readable)."""
        ...

    def close(self) -> None: ...


def _number(value: float | int | None, scale: float = 1.0) -> float:
    return NAN if value is None else value * scale


# The energy counter is read this often by a sampler. It updates only about every 100 ms, and its read is
# NVML's slow one: a median 3.7 ms on an idle H100, a p99 of 55 ms and up to 95 ms with 32 CUDA processes
# on the GPU, against 0.1 ms or less for each other reading. At 10 Hz it loses nothing the counter could
# tell. The sampling process reads it in a thread of its own on this interval, so that no energy read
# delays a sample (worker.py); the thread sampler reads it with a sample at most this often, and its rows
# between readings hold NaN, which the energy interpolation (align.py, energy.py) skips.
ENERGY_READ_INTERVAL_S = 0.1


class NvmlSource:
    """NVIDIA GPUs through NVML: instant and 1-second-average power, energy counter, clocks, temperature."""

    kind = "nvml"
    slow_energy_read = True

    def __init__(self, indices: list[int]) -> None:
        self._indices = list(indices)
        self._session = nvml.session()
        self._session.__enter__()
        try:
            self._handles = {str(i): nvml.handle(i) for i in indices}
        except Exception:
            self.close()
            raise
        pynvml = nvml.pynvml
        # Field ids of the instant and averaged power readings (nvml.h; Ampere and newer answer both).
        self._power_fields = [pynvml.NVML_FI_DEV_POWER_INSTANT, pynvml.NVML_FI_DEV_POWER_AVERAGE]
        self._energy_read_at = -math.inf  # time.monotonic() of the latest energy counter reading

    def devices(self) -> list[str]:
        return list(self._handles)

    def identities(self) -> dict[str, str]:
        """Each device's UUID: an index names another GPU in each job's allocation on a cluster."""
        return {d: nvml._text(nvml.pynvml.nvmlDeviceGetUUID(h)) or d for d, h in self._handles.items()}

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "gpus": self._indices}

    def _power(self, h: Any) -> tuple[float, float]:
        """(instant, average) power in W; falls back to nvmlDeviceGetPowerUsage on older GPUs."""
        pynvml = nvml.pynvml
        values = nvml.optional(pynvml.nvmlDeviceGetFieldValues, h, self._power_fields)
        readings = []
        for value in values or []:
            ok = value.nvmlReturn == pynvml.NVML_SUCCESS
            readings.append(value.value.uiVal / 1000.0 if ok else NAN)
        if len(readings) != 2 or math.isnan(readings[0]):
            usage = _number(nvml.optional(pynvml.nvmlDeviceGetPowerUsage, h), 1e-3)
            readings = [usage, readings[1] if len(readings) == 2 else NAN]
        return readings[0], readings[1]

    def _energy_due(self) -> bool:
        """Whether this read takes the energy counter too (at most every ENERGY_READ_INTERVAL_S)."""
        now = time.monotonic()
        if now - self._energy_read_at < ENERGY_READ_INTERVAL_S:
            return False
        self._energy_read_at = now
        return True

    def _energy_counter_j(self, h: Any) -> float:
        """The total-energy counter in J; NaN before Volta, which has none."""
        return _number(nvml.optional(nvml.pynvml.nvmlDeviceGetTotalEnergyConsumption, h), 1e-3)

    def read(self, energy: bool = True) -> list[dict[str, Any]]:
        """With energy=True (the thread sampler), the energy counter at most every
        ENERGY_READ_INTERVAL_S, NaN in the rows between."""
        pynvml = nvml.pynvml
        rows = []
        with_energy = energy and self._energy_due()
        for device, h in self._handles.items():
            now = time.time()
            power, power_avg = self._power(h)
            util = nvml.optional(pynvml.nvmlDeviceGetUtilizationRates, h)
            rows.append(
                {
                    "time_unix_s": now,
                    "device": device,
                    "power_w": power,
                    "power_avg_w": power_avg,
                    "energy_j": self._energy_counter_j(h) if with_energy else NAN,
                    "sm_clock_mhz": _number(
                        nvml.optional(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM)
                    ),
                    "mem_clock_mhz": _number(
                        nvml.optional(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM)
                    ),
                    "temperature_c": _number(
                        nvml.optional(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU)
                    ),
                    "util_pct": _number(getattr(util, "gpu", None)),
                    "mem_util_pct": _number(getattr(util, "memory", None)),
                    "clock_event_reasons": _number(nvml.clock_event_reasons(h)),
                }
            )
        return rows

    def energy_j(self) -> dict[str, float] | None:
        readings = self.energy_readings()
        if any(math.isnan(reading.joules) for reading in readings):
            return None  # pre-Volta GPUs have no energy counter
        return {reading.device: reading.joules for reading in readings}

    def energy_readings(self) -> list[EnergyReading]:
        return [
            timed_reading(device, functools.partial(self._energy_counter_j, h))
            for device, h in self._handles.items()
        ]

    def temperature_c(self) -> dict[str, float]:
        pynvml = nvml.pynvml
        return {
            device: _number(nvml.optional(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU))
            for device, h in self._handles.items()
        }

    def close(self) -> None:
        self._session.__exit__(None, None, None)


def _cpu_temperature() -> float:
    readings = getattr(psutil, "sensors_temperatures", lambda: {})() or {}
    values = [entry.current for entries in readings.values() for entry in entries if entry.current]
    return max(values) if values else NAN


class CpuSource:
    """The CPU as one device: utilisation, frequency, temperature where sensors exist, RAPL energy."""

    kind = "cpu"
    slow_energy_read = False  # RAPL's counter is a file read of microseconds: it stays in the row

    def __init__(self, rapl: RaplMeter | None = None) -> None:
        self.rapl = rapl if rapl is not None else RaplMeter()
        psutil.cpu_percent(None)  # the first call only starts psutil's interval
        self._last: tuple[float, float] | None = None

    def devices(self) -> list[str]:
        return ["cpu"]

    def identities(self) -> dict[str, str]:
        return {"cpu": "cpu"}

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "rapl_root": str(self.rapl.root)}

    def read(self, energy: bool = True) -> list[dict[str, Any]]:
        """With energy=False, energy_j is NaN; power still comes from the RAPL counter."""
        now = time.time()
        joules = self._joules()
        power = NAN
        if self._last is not None and not math.isnan(joules) and now > self._last[0]:
            power = (joules - self._last[1]) / (now - self._last[0])
        self._last = (now, joules)
        freq = psutil.cpu_freq()
        memory = psutil.virtual_memory()
        return [
            {
                "time_unix_s": now,
                "device": "cpu",
                "power_w": power,
                "power_avg_w": NAN,
                "energy_j": joules if energy else NAN,
                "sm_clock_mhz": _number(getattr(freq, "current", None)),
                "mem_clock_mhz": NAN,
                "temperature_c": _cpu_temperature(),
                "util_pct": psutil.cpu_percent(None),
                "mem_util_pct": memory.percent,
                "clock_event_reasons": NAN,
            }
        ]

    def _joules(self) -> float:
        return self.rapl.joules() if self.rapl.available else NAN

    def energy_j(self) -> dict[str, float] | None:
        return {"cpu": self.rapl.joules()} if self.rapl.available else None

    def energy_readings(self) -> list[EnergyReading]:
        return [timed_reading("cpu", self._joules)]

    def temperature_c(self) -> dict[str, float]:
        return {"cpu": _cpu_temperature()}

    def close(self) -> None:
        pass


def open_source(gpu_indices: list[int] | None) -> TelemetrySource:
    """NVML for the given GPUs, or the CPU source when no GPU is asked for."""
    return NvmlSource(gpu_indices) if gpu_indices else CpuSource()


def source_from_spec(spec: dict[str, Any]) -> TelemetrySource:
    """The source a `spec()` describes, opened afresh (in the sampling process)."""
    if spec["kind"] == "nvml":
        return NvmlSource(spec["gpus"])
    return CpuSource(RaplMeter(Path(spec["rapl_root"])))
