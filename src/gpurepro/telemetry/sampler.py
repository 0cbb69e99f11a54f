"""What every telemetry sampler does and returns, and the sampler that runs as a thread.

A sampler reads a telemetry source at a fixed rate while the measured work runs, and returns a Trace.
The default one runs in its own process (process.py), so it never competes with the measured work for
the interpreter. The thread kept here runs inside the measured process: NVML and file reads release the
GIL, which is enough for device-bound work, but on host-bound work (eager inference at batch 1, small
training steps) it competes with the work it measures. It stays for comparison
(benchmarks/telemetry_overhead.py) and as a fallback (config `telemetry.sampler: thread`).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

import pandas as pd

from .deadlines import Deadlines
from .sources import SAMPLE_COLUMNS, TelemetrySource


@dataclass(frozen=True)
class Trace:
    """Samples taken between start() and stop(), and how the sampler ran: its kind, the rate it achieved,
    the samples it dropped (deadlines passed without a sample) and how long it took to start.

    `frame` has one row per device per sample, with SAMPLE_COLUMNS. Its energy_j is the energy counter
    at the row's time: read with the sample (NaN between readings, which come at most every
    ENERGY_READ_INTERVAL_S), or, where the process sampler reads a slow counter in a thread of its own,
    interpolated at the row's time from readings taken on their own clock (NaN outside their span).
    Those readings are not samples: rates and counts here count rows only."""

    frame: pd.DataFrame
    requested_rate_hz: float
    start_unix_s: float
    end_unix_s: float
    sampler: str  # "process" or "thread"
    dropped_samples: int
    start_cost_s: float
    latest_wake_s: float = 0.0  # the most a read began after its deadline: the host's CPUs were busy
    slowest_read_s: float = 0.0  # the longest one read of the source took: the driver was busy
    niceness: int | None = None  # the process sampler's scheduling niceness (None: a thread)
    # Readings of every device's energy counter taken apart from the samples (the process sampler's
    # energy thread), and the longest one device's read took; 0 where energy is read with the samples.
    energy_readings: int = 0
    slowest_energy_read_s: float = 0.0

    @property
    def achieved_rate_hz(self) -> float:
        """Samples per second per device over the whole sampling period (see rate_between)."""
        return self.rate_between(self.start_unix_s, self.end_unix_s)

    def rate_between(self, start_unix_s: float, end_unix_s: float) -> float:
        """Samples per second per device taken between two instants: the requested rate times the share
        of the sampling deadlines (start_unix_s + k / requested rate) in that span that got a sample.

        Counting deadlines rather than dividing by the span's length keeps short spans exact: half a
        second at 50 Hz holds 25 or 26 deadlines depending on where it falls, which divided by 0.5 s would
        read as 50 or 52 Hz. NaN for a span with no deadline in it."""
        deadlines = self.deadlines_between(start_unix_s, end_unix_s)
        if deadlines == 0:
            return math.nan
        return self.requested_rate_hz * self.samples_between(start_unix_s, end_unix_s) / deadlines

    def deadlines_between(self, start_unix_s: float, end_unix_s: float) -> int:
        """How many sampling deadlines (start_unix_s + k / requested rate) fall between two instants,
        within the sampling period."""
        start, end = max(start_unix_s, self.start_unix_s), min(end_unix_s, self.end_unix_s)
        period = 1.0 / self.requested_rate_hz
        first = math.ceil((start - self.start_unix_s) / period)
        last = math.floor((end - self.start_unix_s) / period)
        return max(0, last - first + 1)

    def samples_between(self, start_unix_s: float, end_unix_s: float) -> float:
        """Samples per device taken between two instants (rows over devices)."""
        samples = self.between(start_unix_s, end_unix_s)
        return len(samples) / max(samples["device"].nunique(), 1)

    def between(self, start_unix_s: float, end_unix_s: float) -> pd.DataFrame:
        times = self.frame["time_unix_s"]
        return self.frame[(times >= start_unix_s) & (times <= end_unix_s)]

    def describe(self) -> dict[str, Any]:
        """How the sampler ran, for provenance."""
        return {
            "sampler": self.sampler,
            "requested_rate_hz": self.requested_rate_hz,
            "achieved_rate_hz": self.achieved_rate_hz,
            "samples": len(self.frame),
            "dropped_samples": self.dropped_samples,
            "sampler_start_s": self.start_cost_s,
            "sampler_latest_wake_s": self.latest_wake_s,
            "sampler_slowest_read_s": self.slowest_read_s,
            "sampler_niceness": self.niceness,
            "sampler_energy_readings": self.energy_readings,
            "sampler_slowest_energy_read_s": self.slowest_energy_read_s,
        }


class Sampler(ABC):
    """Sample `source` every 1/rate_hz seconds from start() to stop().

    Usage:
        with open_sampler(source, rate_hz=50) as sampler:
            work()
        trace = sampler.trace
    """

    kind: ClassVar[str]

    def __init__(self, source: TelemetrySource, rate_hz: float) -> None:
        if rate_hz <= 0:
            raise ValueError(f"rate_hz must be positive, got {rate_hz}")
        self.source = source
        self.rate_hz = rate_hz
        self.trace: Trace | None = None

    @abstractmethod
    def start(self) -> None:
        """Start sampling; when this returns, samples are being taken."""

    @abstractmethod
    def stop(self) -> Trace:
        """Stop sampling and return the trace; a failure of the source while sampling is raised here
        as RuntimeError('telemetry sampling failed: ...')."""

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.stop()
            return
        with contextlib.suppress(RuntimeError):  # the work's own error is the one to report
            self.stop()


class ThreadSampler(Sampler):
    """The sampler as a daemon thread of the measured process."""

    kind = "thread"

    def __init__(self, source: TelemetrySource, rate_hz: float) -> None:
        super().__init__(source, rate_hz)
        self._rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._deadlines: Deadlines | None = None
        self._start_unix_s = 0.0

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        self._thread = threading.Thread(target=self._run, name="gpurepro-telemetry", daemon=True)
        self._thread.start()
        self._started.wait()  # as the process sampler: the first sample is taken when start() returns

    def _run(self) -> None:
        deadlines = Deadlines(self.rate_hz)
        self._start_unix_s = time.time()  # the first deadline, which rate_between counts from
        try:
            self._rows.extend(self.source.read())
            self._started.set()
            while not self._stop.wait(deadlines.wait_s()):
                deadlines.reading()
                self._rows.extend(self.source.read())
        except BaseException as err:  # surfaced in stop(), never lost in the thread
            self._error = err
        finally:
            self._started.set()
        self._deadlines = deadlines

    def stop(self) -> Trace:
        if self._thread is None:
            raise RuntimeError("sampler was never started")
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise RuntimeError(f"telemetry sampling failed: {self._error}") from self._error
        frame = pd.DataFrame(self._rows, columns=SAMPLE_COLUMNS)
        deadlines = self._deadlines
        assert deadlines is not None
        self.trace = Trace(
            frame, self.rate_hz, self._start_unix_s, time.time(), self.kind, deadlines.dropped, 0.0,
            deadlines.latest_wake_s, deadlines.slowest_read_s,
        )  # fmt: skip
        return self.trace
