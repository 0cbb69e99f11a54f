"""A background sampler: reads a telemetry source at a fixed rate while the measured work runs.

It runs in a daemon thread; NVML and file reads happen in C or the kernel with the GIL released, so the
measured thread is barely touched (benchmarks/telemetry_overhead.py measures by how much).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pandas as pd

from .sources import SAMPLE_COLUMNS, TelemetrySource


@dataclass(frozen=True)
class Trace:
    """Samples taken between start() and stop(), with the rate actually achieved."""

    frame: pd.DataFrame
    requested_rate_hz: float
    start_unix_s: float
    end_unix_s: float

    @property
    def achieved_rate_hz(self) -> float:
        """Samples per second per device over the sampling period."""
        duration = self.end_unix_s - self.start_unix_s
        devices = max(self.frame["device"].nunique(), 1) if len(self.frame) else 1
        return (len(self.frame) / devices) / duration if duration > 0 else 0.0

    def between(self, start_unix_s: float, end_unix_s: float) -> pd.DataFrame:
        times = self.frame["time_unix_s"]
        return self.frame[(times >= start_unix_s) & (times <= end_unix_s)]


class TelemetrySampler:
    """Sample `source` every 1/rate_hz seconds in a background thread until stopped.

    Usage:
        with TelemetrySampler(source, rate_hz=50) as sampler:
            work()
        trace = sampler.trace
    """

    def __init__(self, source: TelemetrySource, rate_hz: float) -> None:
        if rate_hz <= 0:
            raise ValueError(f"rate_hz must be positive, got {rate_hz}")
        self.source = source
        self.rate_hz = rate_hz
        self._rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._start_unix_s = 0.0
        self.trace: Trace | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        self._start_unix_s = time.time()
        self._thread = threading.Thread(target=self._run, name="gpurepro-telemetry", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        period = 1.0 / self.rate_hz
        next_at = time.perf_counter()
        try:
            while not self._stop.is_set():
                self._rows.extend(self.source.read())
                # Fixed-rate schedule: a slow read delays one sample, not every later one.
                next_at += period
                delay = next_at - time.perf_counter()
                if delay < 0:
                    next_at = time.perf_counter()
                    delay = 0
                self._stop.wait(delay)
        except BaseException as err:  # surfaced in stop(), never lost in the thread
            self._error = err

    def stop(self) -> Trace:
        if self._thread is None:
            raise RuntimeError("sampler was never started")
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise RuntimeError(f"telemetry sampling failed: {self._error}") from self._error
        frame = pd.DataFrame(self._rows, columns=SAMPLE_COLUMNS)
        self.trace = Trace(frame, self.rate_hz, self._start_unix_s, time.time())
        return self.trace

    def __enter__(self) -> TelemetrySampler:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
