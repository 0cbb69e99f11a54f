"""The sampler in its own process, so telemetry cannot take time from the work it measures.

start() launches `python -m gpurepro.telemetry.worker` (which imports only its source and the standard
library), hands it an unlinked temporary file to append samples to, and returns once it has taken its
first sample. While it samples, the measured process does nothing for telemetry: no thread, no reads.
stop() closes the worker's stdin, which tells it to finish; it flushes, reports its counts and exits,
and the measured process reads the file once. Both stamp with time.time(), so samples line up with the
repetitions the measured process timed. Where the energy counter is slow to read (NVML), the worker reads
it in a thread of its own on its own clock, and read_spool() interpolates it at each sample's time. The
worker dies with the measured process even when that is killed (see worker.py), and the file vanishes
with both.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from .sampler import Sampler, Trace
from .sources import SAMPLE_COLUMNS, TelemetrySource
from .spool import DEVICE_COLUMN, RECORD, energy_device_code

WORKER_MODULE = "gpurepro.telemetry.worker"
# NVML may take seconds to start where the driver is not kept loaded (no persistence mode).
START_TIMEOUT_S = 60.0
# A read in progress when stop() is called finishes first; NVML reads take milliseconds.
STOP_TIMEOUT_S = 30.0
# The directory this package was imported from: the worker runs in it, so `python -m` finds this same
# code first, installed or not.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
TIME_COLUMN = SAMPLE_COLUMNS.index("time_unix_s")
ENERGY_COLUMN = SAMPLE_COLUMNS.index("energy_j")


def read_spool(spool: IO[bytes], devices: list[str]) -> pd.DataFrame:
    """The samples the worker wrote (spool.py's records), with SAMPLE_COLUMNS, in the order taken: one
    row per device per sample. A partly written last record (a worker killed mid-write) is left out.

    Energy readings the worker's energy thread took on their own clock are not rows: each row's energy_j
    is its device's counter interpolated at the row's time between the readings around it (see
    fill_energy). A device without such readings keeps the energy_j its rows were sampled with."""
    spool.seek(0)
    data = spool.read()
    whole = len(data) - len(data) % RECORD.size
    records = np.frombuffer(data[:whole], dtype="<f8").reshape(-1, len(SAMPLE_COLUMNS))
    is_energy = records[:, DEVICE_COLUMN] < 0
    frame = pd.DataFrame(records[~is_energy], columns=SAMPLE_COLUMNS)
    frame["device"] = np.asarray(devices, dtype=object)[frame["device"].to_numpy(dtype=int)]
    fill_energy(frame, records[is_energy], devices)
    return frame


def fill_energy(frame: pd.DataFrame, readings: np.ndarray, devices: list[str]) -> None:
    """Set energy_j of each row of a device that has energy readings (spool records, in any order) to
    the counter interpolated linearly at the row's time; NaN at a time before the first or after the
    last reading, never extrapolated. Readings of a device without a counter (NaN) are skipped."""
    numbers = energy_device_code(readings[:, DEVICE_COLUMN]).astype(int)
    times, joules = readings[:, TIME_COLUMN], readings[:, ENERGY_COLUMN]
    for number, device in enumerate(devices):
        mine = (numbers == number) & ~np.isnan(joules)
        if not mine.any():
            continue
        order = np.argsort(times[mine], kind="stable")  # np.interp needs increasing times
        rows = (frame["device"] == device).to_numpy()
        frame.loc[rows, "energy_j"] = np.interp(
            frame.loc[rows, "time_unix_s"].to_numpy(),
            times[mine][order],
            joules[mine][order],
            left=np.nan,
            right=np.nan,
        )


def trace_from_report(
    frame: pd.DataFrame, report: dict[str, Any], rate_hz: float, start_cost_s: float
) -> Trace:
    """The trace of a run of the worker, from its samples and its "stopped" report."""
    return Trace(
        frame,
        rate_hz,
        report["start_unix_s"],
        report["end_unix_s"],
        ProcessSampler.kind,
        report["dropped"],
        start_cost_s,
        report["latest_wake_s"],
        report["slowest_read_s"],
        report["niceness"],
        report["energy_readings"],
        report["slowest_energy_read_s"],
    )


class ProcessSampler(Sampler):
    """The sampler as a separate process that appends samples to a file the measured process reads at
    stop(). Start and stop it from one thread (a `with` block does): on Linux the worker is tied to the
    thread that started it."""

    kind = "process"

    def __init__(self, source: TelemetrySource, rate_hz: float) -> None:
        super().__init__(source, rate_hz)
        self._process: subprocess.Popen[bytes] | None = None
        self._spool: IO[bytes] | None = None
        self._pending = b""
        self._devices: list[str] = []
        self._start_cost_s = 0.0

    @property
    def pid(self) -> int | None:
        """The sampling process's id while it runs."""
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        if self._process is not None:
            raise RuntimeError("sampler already started")
        began = time.perf_counter()
        self._spool = tempfile.TemporaryFile(prefix="gpurepro-telemetry-")  # noqa: SIM115 - _end() closes it
        request = {
            "source": self.source.spec(),
            "rate_hz": self.rate_hz,
            "parent_pid": os.getpid(),
            "spool_fd": self._spool.fileno(),
        }
        self._process = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, json.dumps(request)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(self._spool.fileno(),),
            cwd=PACKAGE_ROOT,
        )
        ready = self._message(START_TIMEOUT_S)
        if ready is None or ready["event"] != "ready":
            reason = self._why_silent(START_TIMEOUT_S) if ready is None else ready["error"]
            self._end(grace_s=0)
            raise RuntimeError(f"the telemetry sampling process did not start: {reason}")
        self._devices = ready["devices"]
        self._start_cost_s = time.perf_counter() - began

    def stop(self) -> Trace:
        if self._process is None or self._spool is None:
            raise RuntimeError("sampler was never started")
        assert self._process.stdin is not None
        self._process.stdin.close()  # the worker's signal to finish
        report = self._message(STOP_TIMEOUT_S)
        reason = self._why_silent(STOP_TIMEOUT_S) if report is None else report["error"]
        try:
            if reason:
                raise RuntimeError(f"telemetry sampling failed: {reason}")
            frame = read_spool(self._spool, self._devices)
        finally:
            self._end(grace_s=STOP_TIMEOUT_S)
        assert report is not None
        self.trace = trace_from_report(frame, report, self.rate_hz, self._start_cost_s)
        return self.trace

    def _message(self, timeout_s: float) -> dict[str, Any] | None:
        """The worker's next JSON line; None when it closed stdout or sent none within timeout_s."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return json.loads(line)

    def _why_silent(self, timeout_s: float) -> str:
        """Why no message came: the worker exited (its traceback went to stderr, the job's log) or hung."""
        assert self._process is not None
        try:
            status = self._process.wait(timeout=1.0)  # a closed stdout: the worker is exiting
        except subprocess.TimeoutExpired:
            return f"process {self._process.pid} sent nothing for {timeout_s:g} s"
        return f"process {self._process.pid} exited with status {status} (its error is in the log above)"

    def _end(self, grace_s: float) -> None:
        """Reap the worker (killing it if it does not exit within grace_s), close its pipes and the
        spool: nothing of the sampler is left once this returns."""
        assert self._process is not None and self._spool is not None
        try:
            self._process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                stream.close()
        self._spool.close()
