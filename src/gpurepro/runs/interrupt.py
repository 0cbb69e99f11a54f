"""Ctrl-C ends a run in one line. The terminal sends SIGINT to Snakemake and to every job it started;
each job stops on its own (a Python job with a KeyboardInterrupt traceback in its log), and Snakemake
would then report each as a failed job, show its log and end on "At least one job did not complete
successfully". None of that is news to whoever pressed Ctrl-C: after the signal the console says one
line, and Snakemake's own log file (.snakemake/log/) keeps everything it said.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Iterable
from types import FrameType

INTERRUPTED = (
    "gpurepro: interrupted (Ctrl-C): the jobs that were running stopped, and Snakemake removed what they "
    "had begun to write; finished jobs are kept. Run the same command again to go on."
)


class InterruptWatch(logging.Filter):
    """Set once SIGINT arrived; as a filter of the console's log handlers it then lets nothing through."""

    def __init__(self) -> None:
        super().__init__()
        self.interrupted = False

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.interrupted


def console_handlers(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers of `logger` that write to the terminal, not to a log file."""
    return [
        handler
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
    ]


def watch_interrupts(handlers: Iterable[logging.Handler]) -> InterruptWatch:
    """From now on, SIGINT prints INTERRUPTED once and quiets `handlers`, then interrupts as before (the
    handler it replaces, or KeyboardInterrupt), so that Snakemake stops its jobs as it always does. A
    process that ignores SIGINT (started in the background of a script) goes on ignoring it."""
    watch = InterruptWatch()
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        return watch
    for handler in handlers:
        handler.addFilter(watch)

    def interrupted(signum: int, frame: FrameType | None) -> None:
        if not watch.interrupted:
            watch.interrupted = True
            print(INTERRUPTED, file=sys.stderr, flush=True)
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)
    return watch
