"""The sampling process: `python -m gpurepro.telemetry.worker REQUEST`, started by ProcessSampler.

It runs apart from the measured process so that sampling never takes the measured interpreter's time
(a thread would compete for its GIL on host-bound work), and it imports only what sampling needs: the
source (NVML or psutil and RAPL) and the standard library, never torch or pandas, so it starts in a
fraction of a second.

REQUEST is JSON: the source's spec, the rate, the parent's pid and the descriptor of the spool file it
inherited. It talks to its parent over its standard streams, one JSON line per message:
- stdout: {"event": "ready", "devices": [...]} once the source is open and the first sample taken, and
  {"event": "stopped", ...} (samples, dropped, start and end time, energy readings, error) when it ends;
  or {"event": "failed", "error": ...} when the source cannot be opened.
- stdin: the parent never writes; its end closing (stop(), or the parent's death) is the signal to stop.
Samples are stamped with time.time() by the source, the clock the measured process stamps its
repetitions with, so the two line up without any conversion.

Where the source's energy counter is slow to read (NVML's: milliseconds, up to 95 ms under load, against
0.1 ms for every other reading), a daemon thread of this process reads it every ENERGY_READ_INTERVAL_S
into the same spool, each reading stamped with the midpoint of its call, and the sampling loop reads
every other column without it, so no energy read delays a sample. NVML's calls go through ctypes, which
releases the GIL while they wait on the driver. The measured process interpolates the readings at each
sample's time (process.read_spool).

It never outlives the measurement: on Linux the kernel kills it when its parent dies (PR_SET_PDEATHSIG);
elsewhere, and as a second guard, it stops when stdin closes or its parent pid changes, which it checks
at every sample. Ctrl-C in a terminal reaches the whole process group; it ignores that and ends with its
parent instead, so the parent's clean-up still finds it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from .deadlines import Deadlines
from .sources import ENERGY_READ_INTERVAL_S, TelemetrySource, source_from_spec
from .spool import SpoolWriter

PR_SET_PDEATHSIG = 1  # linux/prctl.h
SAMPLER_NICENESS = -10  # ahead of normal work; never a real-time class, which could starve the host
# How long stopping waits for the energy thread's last read: NVML's slowest reads take 0.1 s; one that
# has not returned after this is hung, and the sampler reports that rather than wait on it.
ENERGY_STOP_TIMEOUT_S = 10.0


def follow_parent(parent_pid: int) -> None:
    """Die with the parent: ask the kernel to kill this process when the parent exits, then check the
    parent did not exit before the request was made."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        sys.exit(0)


def raise_priority() -> None:
    """Run ahead of the measured work when the host's CPUs are all busy (e.g. 32 training processes on
    16 cores), so that samples are not late: lower this process's niceness where allowed (root, or
    CAP_SYS_NICE). Where it is not, the sampler runs at normal priority, and its trace says so."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, SAMPLER_NICENESS)


def say(message: dict[str, Any]) -> None:
    """One message to the parent; none when the parent is gone (its end of the pipe closed)."""
    try:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # point stdout elsewhere, so the flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def stop_requested(control_fd: int, wait_s: float, parent_pid: int) -> bool:
    """Wait up to wait_s for the parent's end of the control pipe to close; True once it has, or once
    the parent is gone (its pid is no longer this process's parent) while another process holds it."""
    closed, _, _ = select.select([control_fd], [], [], wait_s)
    return bool(closed) or os.getppid() != parent_pid


class EnergyInRows:
    """The energy counter of a source whose read is cheap: read with each sample, nothing to run apart.
    The interface of EnergyThread, which replaces it where the read is slow."""

    readings = 0  # readings of every device's counter taken apart from the samples
    slowest_read_s = 0.0  # the longest one device's counter took to read apart from the samples

    def start(self) -> None:
        pass

    def check(self) -> None:
        """Raise the reader's failure, if it failed."""

    def stop(self) -> None:
        """Stop reading; raise the reader's failure, if it failed."""


class EnergyThread(EnergyInRows):
    """Reads the energy counter of every device into the spool every ENERGY_READ_INTERVAL_S, in a daemon
    thread (it never keeps the process alive once the sampling ends or the parent dies)."""

    def __init__(self, source: TelemetrySource, spool: SpoolWriter, numbers: dict[str, int]) -> None:
        self._source, self._spool, self._numbers = source, spool, numbers
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpurepro-energy", daemon=True)
        self._error: Exception | None = None

    def start(self) -> None:
        """Take the first reading here, before the first sample, and start the thread. The readings then
        span every sample: energy is interpolated between readings, never extrapolated past them."""
        self._read()
        self._thread.start()

    def check(self) -> None:
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """Stop the thread after one last reading, which comes after the last sample."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(ENERGY_STOP_TIMEOUT_S)
        if self._thread.is_alive():
            raise TimeoutError(f"an energy counter read did not return within {ENERGY_STOP_TIMEOUT_S:g} s")
        self.check()

    def _run(self) -> None:
        deadlines = Deadlines(1.0 / ENERGY_READ_INTERVAL_S)  # the first reading was taken by start()
        try:
            while not self._stop.wait(deadlines.wait_s()):
                deadlines.reading()
                self._read()
            self._read()
        except Exception as err:  # reported by the sampling loop (check) or at its end (stop)
            self._error = err

    def _read(self) -> None:
        for reading in self._source.energy_readings():
            self._spool.energy(reading, self._numbers[reading.device])
            self.slowest_read_s = max(self.slowest_read_s, reading.seconds)
        self.readings += 1


def energy_reader(source: TelemetrySource, spool: SpoolWriter, numbers: dict[str, int]) -> EnergyInRows:
    """A thread of its own for a source whose energy read is slow; else the read stays in each sample."""
    return EnergyThread(source, spool, numbers) if source.slow_energy_read else EnergyInRows()


def attempt(step: Callable[[], None]) -> str | None:
    """Run one step of sampling; its failure as a message for the parent (None if it ran), not raised,
    so the parent can say why sampling stopped."""
    try:
        step()
    except Exception as err:  # any failure of a read, reported to the parent by start() or stop()
        return f"{type(err).__name__}: {err}"
    return None


def sample(
    source: TelemetrySource, rate_hz: float, spool_file: BinaryIO, parent_pid: int, control_fd: int
) -> dict[str, Any]:
    """Take the first sample, tell the parent sampling has started, then read the source on its
    deadlines into the spool until told to stop (control_fd closes; see stop_requested); return what
    happened, for the parent. A slow energy counter is read by a thread of its own (EnergyThread).

    The start time (the first deadline) and the first sample come before the parent hears of them, so
    all the parent does after start() lies inside the trace and after its first sample. A failing read,
    of the samples or of the energy counter, ends sampling and is reported, not raised."""
    numbers = {device: n for n, device in enumerate(source.devices())}
    spool = SpoolWriter(spool_file)
    energy = energy_reader(source, spool, numbers)
    energy_in_rows = not source.slow_energy_read
    samples = 0

    def take() -> None:
        for row in source.read(energy=energy_in_rows):
            spool.sample(row, numbers[row["device"]])
        energy.check()  # a failed energy thread ends sampling as a failing read does

    def run() -> None:
        nonlocal samples
        take()
        samples = 1
        say({"event": "ready", "devices": list(numbers)})
        while not stop_requested(control_fd, deadlines.wait_s(), parent_pid):
            deadlines.reading()
            take()
            samples += 1

    error = attempt(energy.start)  # before the first deadline, which a slow first read must not delay
    deadlines = Deadlines(rate_hz)
    start = time.time()  # the first deadline, which Trace.rate_between counts from
    error = error or attempt(run)
    end = time.time()  # before the energy thread's last reading, which is no sample's deadline
    stopping = attempt(energy.stop)  # whatever failed before: no write may follow the flush
    error = error or stopping
    spool.flush()
    return {
        "event": "stopped",
        "samples": samples,
        "dropped": deadlines.dropped,
        "latest_wake_s": deadlines.latest_wake_s,
        "slowest_read_s": deadlines.slowest_read_s,
        "energy_readings": energy.readings,
        "slowest_energy_read_s": energy.slowest_read_s,
        "niceness": os.getpriority(os.PRIO_PROCESS, 0),
        "start_unix_s": start,
        "end_unix_s": end,
        "error": error,
    }


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    parent_pid = request["parent_pid"]
    follow_parent(parent_pid)
    raise_priority()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        source = source_from_spec(request["source"])
    except Exception as err:  # NVML missing, a GPU index that does not exist: the parent says why
        say({"event": "failed", "error": f"{type(err).__name__}: {err}"})
        return 1
    try:
        with os.fdopen(request["spool_fd"], "wb", buffering=1 << 16) as spool:
            report = sample(source, request["rate_hz"], spool, parent_pid, sys.stdin.fileno())
    finally:
        source.close()
    say(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
