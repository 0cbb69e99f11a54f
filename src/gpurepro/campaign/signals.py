"""How a node job and its per-GPU processes end, in words a node's record can carry.

SLURM ends a job at its time limit, and on `scancel`, with SIGTERM, and SIGKILL after its KillWait
(30 s by default); a terminal's Ctrl-C sends SIGINT, a closed session SIGHUP. The node job catches these
(`caught`): it stops its per-GPU processes and records the node failed, naming the signal and the run,
before SIGKILL can follow. A per-GPU process killed by a signal (the out-of-memory killer's SIGKILL) or
one that outlives the run's time limit is named the same way. What no process can catch (SIGKILL of the
node job itself) leaves no record: the next run's tables record it (unrecorded.py).
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from types import FrameType

ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_WAIT_S = 10.0  # a stopped process's time to end on SIGTERM before SIGKILL


class Killed(Exception):
    """The node job was sent a signal that ends it."""

    def __init__(self, signum: int) -> None:
        super().__init__(describe_signal(signum))
        self.signum = signum


def describe_signal(signum: int) -> str:
    """'signal 15 (SIGTERM)'."""
    try:
        return f"signal {signum} ({signal.Signals(signum).name})"
    except ValueError:
        return f"signal {signum}"


def how_ended(exitcode: int | None) -> str:
    """A process's end in words: 'killed by signal 9 (SIGKILL)', 'exited with status 1'."""
    if exitcode is None:
        return "did not end"
    if exitcode < 0:
        return f"killed by {describe_signal(-exitcode)}"
    return f"exited with status {exitcode}"


@contextmanager
def caught() -> Iterator[None]:
    """Within: a signal in ENDING raises Killed in the main thread (out of a wait on the workers),
    once; the handlers before are restored after."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        for each in ENDING:  # a second signal while the first is handled is not raised again
            signal.signal(each, signal.SIG_IGN)
        raise Killed(signum)

    previous = {each: signal.signal(each, handler) for each in ENDING}
    try:
        yield
    finally:
        for each, before in previous.items():
            signal.signal(each, before)


def stop(processes: Iterable[BaseProcess]) -> None:
    """End processes that are still running: SIGTERM, then SIGKILL for any left after STOP_WAIT_S."""
    running = [process for process in processes if process.is_alive()]
    for process in running:
        process.terminate()
    for process in running:
        process.join(STOP_WAIT_S)
        if process.is_alive():
            process.kill()
            process.join()
