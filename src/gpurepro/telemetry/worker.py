"""The sampling process: `python -m gpurepro.telemetry.worker REQUEST`, started by ProcessSampler.

It runs apart from the measured process so that sampling never takes the measured interpreter's time
(a thread would compete for its GIL on host-bound work), and it imports only what sampling needs: the
source (NVML or psutil and RAPL) and the standard library, never torch or pandas, so it starts in a
fraction of a second.

REQUEST is JSON: the source's spec, the rate, the parent's pid and the descriptor of the spool file it
inherited. It talks to its parent over its standard streams, one JSON line per message:
- stdout: {"event": "ready", "devices": [...]} once the source is open and the first sample taken, and
  {"event": "stopped", ...} (samples, dropped, start and end time, error) when it ends; or
  {"event": "failed", "error": ...} when the source cannot be opened.
- stdin: the parent never writes; its end closing (stop(), or the parent's death) is the signal to stop.
Samples are stamped with time.time() by the source, the clock the measured process stamps its
repetitions with, so the two line up without any conversion.

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
import time
from typing import Any, BinaryIO

from .deadlines import Deadlines
from .sources import TelemetrySource, source_from_spec
from .spool import pack

PR_SET_PDEATHSIG = 1  # linux/prctl.h
SAMPLER_NICENESS = -10  # ahead of normal work; never a real-time class, which could starve the host


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


def sample(source: TelemetrySource, rate_hz: float, spool: BinaryIO, parent_pid: int) -> dict[str, Any]:
    """Take the first sample, tell the parent sampling has started, then read the source on its
    deadlines into the spool until told to stop; return what happened, for the parent.

    The start time (the first deadline) and the first sample come before the parent hears of them, so
    all the parent does after start() lies inside the trace and after its first sample. A failing read
    ends sampling and is reported, not raised, so the parent can say why."""
    numbers = {device: n for n, device in enumerate(source.devices())}

    def take() -> None:
        for row in source.read():
            spool.write(pack(row, numbers[row["device"]]))

    deadlines = Deadlines(rate_hz)
    start = time.time()  # the first deadline, which Trace.rate_between counts from
    samples, error = 0, None
    try:
        take()
        samples = 1
        say({"event": "ready", "devices": list(numbers)})
        while not stop_requested(sys.stdin.fileno(), deadlines.wait_s(), parent_pid):
            deadlines.reading()
            take()
            samples += 1
    except Exception as err:  # any failure of a read, reported to the parent by start() or stop()
        error = f"{type(err).__name__}: {err}"
    spool.flush()
    return {
        "event": "stopped",
        "samples": samples,
        "dropped": deadlines.dropped,
        "latest_wake_s": deadlines.latest_wake_s,
        "slowest_read_s": deadlines.slowest_read_s,
        "niceness": os.getpriority(os.PRIO_PROCESS, 0),
        "start_unix_s": start,
        "end_unix_s": time.time(),
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
            report = sample(source, request["rate_hz"], spool, parent_pid)
    finally:
        source.close()
    say(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
