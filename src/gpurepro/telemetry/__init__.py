"""Telemetry: sampling of power, clocks, temperature and throttle reasons in a process of its own (or a
thread); energy windows; idle baselines; cool-down. NVML for NVIDIA GPUs, psutil and RAPL for the CPU.

Names are imported from their modules on first use, so the sampling process (worker.py), which imports
this package on its way to its source, does not load pandas and numpy with the rest of it.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "CooldownResult": "cooldown",
    "wait_for_cooldown": "cooldown",
    "idle_temperatures": "cooldown",
    "COOLDOWN_MARGIN_C": "cooldown",
    "IDLE_TAIL_MARGIN_S": "cooldown",
    "SETTLE_S": "cooldown",
    "PLATEAU_S": "cooldown",
    "last_end": "cooldown",
    "cooldown_levels": "cooldown",
    "forget_levels": "cooldown",
    "record_level": "cooldown",
    "measuring": "cooldown",
    "record_end": "cooldown",
    "settle": "cooldown",
    "busy": "cooldown",
    "EnergyMeter": "energy",
    "EnergyWindow": "energy",
    "IdleBaseline": "energy",
    "idle_baseline": "energy",
    "measure_idle": "energy",
    "subwindow_powers": "energy",
    "window_from_trace": "energy",
    "ProcessSampler": "process",
    "Sampler": "sampler",
    "ThreadSampler": "sampler",
    "Trace": "sampler",
    "DEFAULT_SAMPLER": "samplers",
    "SAMPLERS": "samplers",
    "open_sampler": "samplers",
    "SAMPLE_COLUMNS": "sources",
    "CpuSource": "sources",
    "NvmlSource": "sources",
    "TelemetrySource": "sources",
    "open_source": "sources",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
