"""One of the B processes of `concurrent` and `mps`: `python -m gpurepro.hfta_study.worker FD`, started by
the launcher with one end of a pipe as file descriptor FD.

It starts from this module, not from the `gpurepro` command, so it imports only the training it runs
(torch and `training`): through the command line it would import every subcommand and their libraries,
start-up time in each of the B processes and one more place for an import to fail. Over the pipe it
receives its settings and model index, says when its warm-up is done, waits for the launcher's signal
to start its timed steps (the barrier of all B processes), and sends its result or why it failed.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from multiprocessing.connection import Connection
from typing import Any

from . import training
from .launcher import START, classify


def _start_together(launcher: Connection) -> None:
    """Ready; the timed steps begin when the launcher says all B processes are (a broken barrier if not)."""
    launcher.send(("ready", None))
    if launcher.recv() != START:
        raise threading.BrokenBarrierError


def _report(launcher: Connection, status: str, payload: Any) -> None:
    # A launcher that gave up on the point (a process died, the time ran out) has closed its end.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        launcher.send((status, payload))


def run(launcher: Connection) -> None:
    """Train the model the launcher names; report its row, or why it failed (never raise)."""
    settings, index = launcher.recv()
    try:
        training.prepare_process(settings)
        row = training.train_single(settings, index, lambda: _start_together(launcher)).row()
        _report(launcher, "ok", row)
    except BaseException as err:  # noqa: BLE001 - every failure is reported to the launcher
        outcome = classify(err)
        _report(launcher, outcome.status, f"{outcome.reason}\n{traceback.format_exc()[-1500:]}")


def main(argv: list[str]) -> int:
    with Connection(int(argv[0])) as launcher:
        run(launcher)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
