"""Where telemetry samples come from: NVML for NVIDIA GPUs, psutil and RAPL for the CPU.

Both sources return rows with the same columns, so the sampler, the trace files and the plots do not care
which one ran. Units are in the column names. A value a source cannot read is NaN, never a made-up zero.
Each source also says how to open it again (`spec()`, plain JSON), so the sampling process opens its own.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Protocol

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


class TelemetrySource(Protocol):
    """A set of devices that can be read many times a second."""

    kind: str  # "nvml" or "cpu"

    def devices(self) -> list[str]: ...

    def spec(self) -> dict[str, Any]:
        """How to open this source again in another process (see `source_from_spec`)."""
        ...

    def read(self) -> list[dict[str, Any]]:
        """One row per device with SAMPLE_COLUMNS."""
        ...

    def energy_j(self) -> dict[str, float] | None:
        """Cumulative energy per device in joules from a hardware counter, or None where there is none."""
        ...

    def temperature_c(self) -> dict[str, float]:
        """Current temperature per device (NaN where not readable)."""
        ...

    def close(self) -> None: ...


def _number(value: float | int | None, scale: float = 1.0) -> float:
    return NAN if value is None else value * scale


# The energy counter is read at most this often by a sampler. It updates only about every 100 ms, and its
# read is NVML's slow one: 4-6 ms on an idle H100 and up to 100 ms with 32 CUDA processes on the GPU,
# against 0.1 ms or less for each other reading. Read with every sample, it made a 50 Hz sampler miss
# deadlines under load; at 10 Hz it loses nothing the counter could tell, and rows between its readings
# hold NaN, which the energy interpolation (align.py, energy.py) already skips.
ENERGY_READ_INTERVAL_S = 0.1


class NvmlSource:
    """NVIDIA GPUs through NVML: instant and 1-second-average power, energy counter, clocks, temperature."""

    kind = "nvml"

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

    def read(self) -> list[dict[str, Any]]:
        pynvml = nvml.pynvml
        rows = []
        with_energy = self._energy_due()
        for device, h in self._handles.items():
            now = time.time()
            power, power_avg = self._power(h)
            util = nvml.optional(pynvml.nvmlDeviceGetUtilizationRates, h)
            energy = nvml.optional(pynvml.nvmlDeviceGetTotalEnergyConsumption, h) if with_energy else None
            rows.append(
                {
                    "time_unix_s": now,
                    "device": device,
                    "power_w": power,
                    "power_avg_w": power_avg,
                    "energy_j": _number(energy, 1e-3),
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
        pynvml = nvml.pynvml
        readings = {
            device: nvml.optional(pynvml.nvmlDeviceGetTotalEnergyConsumption, h)
            for device, h in self._handles.items()
        }
        if any(value is None for value in readings.values()):
            return None  # pre-Volta GPUs have no energy counter
        return {device: value / 1000.0 for device, value in readings.items()}

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

    def __init__(self, rapl: RaplMeter | None = None) -> None:
        self.rapl = rapl if rapl is not None else RaplMeter()
        psutil.cpu_percent(None)  # the first call only starts psutil's interval
        self._last: tuple[float, float] | None = None

    def devices(self) -> list[str]:
        return ["cpu"]

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "rapl_root": str(self.rapl.root)}

    def read(self) -> list[dict[str, Any]]:
        now = time.time()
        energy = self.rapl.joules() if self.rapl.available else NAN
        power = NAN
        if self._last is not None and not math.isnan(energy) and now > self._last[0]:
            power = (energy - self._last[1]) / (now - self._last[0])
        self._last = (now, energy)
        freq = psutil.cpu_freq()
        memory = psutil.virtual_memory()
        return [
            {
                "time_unix_s": now,
                "device": "cpu",
                "power_w": power,
                "power_avg_w": NAN,
                "energy_j": energy,
                "sm_clock_mhz": _number(getattr(freq, "current", None)),
                "mem_clock_mhz": NAN,
                "temperature_c": _cpu_temperature(),
                "util_pct": psutil.cpu_percent(None),
                "mem_util_pct": memory.percent,
                "clock_event_reasons": NAN,
            }
        ]

    def energy_j(self) -> dict[str, float] | None:
        return {"cpu": self.rapl.joules()} if self.rapl.available else None

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
