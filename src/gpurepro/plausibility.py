"""Numbers that cannot be: a rate above the GPU's datasheet peak, a time below what any launch takes.

A timing taken on the wrong GPU's stream (CUDA events recorded on GPU 0 around work on GPU 1) reads
microseconds for seconds of work and a thousand times the card's peak, and nothing else fails. So every
measuring command checks its figures against the peak of the GPU it measured before it files them, and
aggregation checks the tables again, so an impossible figure never reaches a table, the verdict or
`compare`. The peaks are the datasheet rates of the hardware table (config/hardware/, matched by NVML
name); a GPU without a file there is held to a bound no GPU reaches yet (GENEROUS_PEAKS), which still
catches a 1000x error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import pandas as pd

from .errors import GpureproError
from .hardware import Gpu, load_hardware

# A measured rate may sit a little above a datasheet peak (a card boosting past the clock the datasheet
# quotes); far above it, it was not measured.
PEAK_MARGIN = 1.2
# Bounds for a GPU (or CPU) without a hardware file: above every current GPU's dense peak (B200: FP32
# 80 TFLOP/s, dense FP16 2,250 TFLOP/s, 8,000 GB/s), far below the 1000x a wrong stream reads.
GENEROUS_PEAKS = {"fp32_gemm": 250.0, "fp16_gemm": 5000.0, "memory_bandwidth": 20000.0}
UNITS = {"fp32_gemm": "TFLOP/s", "fp16_gemm": "TFLOP/s", "memory_bandwidth": "GB/s"}
# No timed GPU operation completes faster: a kernel launch alone takes a few microseconds, and two CUDA
# events recorded around nothing on the right stream read about a microsecond apart.
TIME_FLOOR_MS = 0.002


class ImplausibleMeasurement(GpureproError):
    """A figure no GPU of this kind can reach: it was not measured (e.g. timed on another GPU)."""


@dataclass(frozen=True)
class Peak:
    value: float
    unit: str
    source: str  # the hardware file, or why the generous bound applies

    def bound(self) -> float:
        return self.value * PEAK_MARGIN


@cache
def _table() -> tuple[Gpu, ...]:
    """The hardware table, read once per process (checked against its schema by load_hardware)."""
    return tuple(load_hardware().values())


def peak(reference: str, gpu_name: str) -> Peak:
    """The datasheet peak of `reference` (fp32_gemm, fp16_gemm, memory_bandwidth) on the GPU NVML calls
    `gpu_name`, or the generous bound where no hardware file names that GPU or that rate."""
    for gpu in _table():
        rates = gpu.rates.get(reference)
        if rates is not None and rates.datasheet is not None and gpu.matches(gpu_name):
            return Peak(rates.datasheet.value, UNITS[reference], f"config/hardware/{gpu.id}.yaml")
    return Peak(GENEROUS_PEAKS[reference], UNITS[reference], f"no datasheet for '{gpu_name}': generous bound")


def check_rate(reference: str, value: float, gpu_name: str, what: str) -> None:
    """Stop unless `value` (in the reference's unit) is a rate `gpu_name` can reach; `what` names the
    figure in the message (e.g. 'GPU 1 SGEMM N=8192 rate')."""
    limit = peak(reference, gpu_name)
    if math.isfinite(value) and value > limit.bound():
        raise ImplausibleMeasurement(
            f"{what} on {gpu_name}: {value:.4g} {limit.unit} is above the {reference} peak of "
            f"{limit.value:.4g} {limit.unit} x {PEAK_MARGIN} ({limit.source}): not a measurement of this "
            "GPU (timed on another GPU's stream?); nothing was filed"
        )


def check_time(ms: float, what: str) -> None:
    """Stop where a timed operation reads faster than any GPU launch can complete."""
    if math.isfinite(ms) and ms < TIME_FLOOR_MS:
        raise ImplausibleMeasurement(
            f"{what}: {ms:.4g} ms is below the {TIME_FLOOR_MS} ms any timed launch takes: not a "
            "measurement (timed on another GPU's stream?); nothing was filed"
        )


def check_reps(reps: pd.DataFrame, gpu_name: str, what: str) -> None:
    """A measuring job's reps: on a GPU each timed rep (`ms`) above the launch floor, and where they are
    FP32 products (`tflops`: SGEMM, TF32 off) within the GPU's FP32 peak. On the CPU ('cpu') a tiny
    product may take a microsecond: there only the rate is checked."""
    if "ms" in reps and gpu_name != "cpu":
        check_time(float(reps["ms"].min()), f"{what} time")
    if "tflops" in reps:
        check_rate("fp32_gemm", float(reps["tflops"].max()), gpu_name, f"{what} rate")


# Long tables: the metric rows whose median is a reference rate, by (metric, unit).
_TABLE_RATES = {
    ("rate", "TFLOP/s"): "fp32_gemm",  # SGEMM and variability: FP32 products, TF32 off
    ("fp32_gemm", "TFLOP/s"): "fp32_gemm",
    ("fp16_gemm", "TFLOP/s"): "fp16_gemm",
    ("memory_bandwidth", "GB/s"): "memory_bandwidth",
}


def check_table(table: pd.DataFrame, name: str) -> None:
    """Refuse a tidy table holding a rate its GPU cannot reach: a long table's rate rows (any statistic
    but a count), or a wide reps table's `tflops` column. `name` names the table in the message."""
    if table.empty or "gpu_name" not in table:
        return
    if {"metric", "unit", "value"} <= set(table.columns):
        for (metric, unit), reference in _TABLE_RATES.items():
            rows = table[(table["metric"] == metric) & (table["unit"] == unit)]
            for gpu_name, group in rows.groupby("gpu_name"):
                check_rate(reference, float(group["value"].max()), str(gpu_name), f"table {name}: {metric}")
    elif "tflops" in table:
        for gpu_name, group in table.groupby("gpu_name"):
            check_rate("fp32_gemm", float(group["tflops"].max()), str(gpu_name), f"table {name}: rate")
