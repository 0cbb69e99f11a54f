"""Telemetry: background sampling of power, clocks, temperature and throttle reasons; energy windows;
idle baselines; cool-down. NVML for NVIDIA GPUs, psutil and RAPL for the CPU."""

from .cooldown import CooldownResult, wait_for_cooldown
from .energy import EnergyMeter, EnergyWindow, IdleBaseline, idle_baseline, measure_idle, window_from_trace
from .sampler import TelemetrySampler, Trace
from .sources import SAMPLE_COLUMNS, CpuSource, NvmlSource, TelemetrySource, open_source

__all__ = [
    "SAMPLE_COLUMNS",
    "CooldownResult",
    "CpuSource",
    "EnergyMeter",
    "EnergyWindow",
    "IdleBaseline",
    "NvmlSource",
    "TelemetrySampler",
    "TelemetrySource",
    "Trace",
    "idle_baseline",
    "measure_idle",
    "open_source",
    "wait_for_cooldown",
    "window_from_trace",
]
