"""Child processes that must not outlive their purpose: the noise workload, and torchrun with its
workers. Each is started in a session of its own and stopped as a tree.

Stopping a tree takes more than signalling one process group: torchrun starts every worker in a
session of its own, and a worker's DataLoader workers are its children. So the tree is listed (psutil)
before anything is signalled; SIGTERM goes to the process's group, once, and each level passes it on
(torchrun to its workers, which finish their interval and leave); whatever of the tree still runs after
the grace period, or started meanwhile, gets SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import psutil


def _tree(root: int) -> list[psutil.Process]:
    try:
        parent = psutil.Process(root)
        return [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _signal_all(processes: list[psutil.Process], sig: int) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            process.send_signal(sig)


def stop_tree(process: subprocess.Popen, grace_s: float) -> int:
    """SIGTERM the process's group (the session started for it), which passes the signal on to what it
    started (torchrun to its workers); SIGKILL whatever of the tree still runs after `grace_s`; wait for
    all of them. Returns the process's exit status (negative: killed by that signal)."""
    family = _tree(process.pid)
    seen = {p.pid: p for p in family}
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
    others = [p for p in family if p.pid != process.pid]
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    _, alive = psutil.wait_procs(others, timeout=max(0.1, grace_s / 2))
    late = [p for p in _tree(process.pid) + [c for a in alive for c in _tree(a.pid)] if p.pid not in seen]
    alive += late
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.kill()
    _signal_all(alive, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=10)
    return process.wait()


@contextlib.contextmanager
def background_process(command: list[str], grace_s: float = 30.0, **popen: Any) -> Iterator[subprocess.Popen]:
    """Run `command` in a new session for the length of the block, and stop its whole tree on leaving
    the block however it is left: normally, by an exception, or by KeyboardInterrupt."""
    process = subprocess.Popen(command, start_new_session=True, **popen)
    try:
        yield process
    finally:
        stop_tree(process, grace_s)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the block, so `finally` clauses (stopping children) run when
    a scheduler or Snakemake ends this process, instead of it dying with its children left behind."""

    def interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
