"""Run an entry point (`module:function`, called with the argument list) through the fork server named by
$GPUREPRO_FORKSERVER, or in this process when none is named: the `gpurepro` command starts here, and so
does every process the HFTA launcher starts (`python -m gpurepro.forkserver.client [--pass-fd N]
gpurepro.hfta_study.worker:main N`).

This module imports only the standard library, so a job forwarded to the server costs an interpreter
start of a few tens of milliseconds. While the job runs, the signals Snakemake or the user send this
process (SIGINT, SIGTERM, SIGHUP) go on to the job's process group; if this process is killed outright,
the server ends the job itself.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import socket
import sys
from collections.abc import Sequence

from . import protocol

CLI_ENTRY = "gpurepro.cli:main"
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def in_process(entry: str, argv: list[str]) -> int:
    module, _, function = entry.partition(":")
    return int(getattr(importlib.import_module(module), function)(argv) or 0)


def _open_descriptors(fds: Sequence[int]) -> list[int]:
    """The descriptors among `fds` that are open here (a job may run with stdin closed)."""
    open_fds = []
    for fd in fds:
        with contextlib.suppress(OSError):
            os.fstat(fd)
            open_fds.append(fd)
    return open_fds


def _exit_code(code: int) -> int:
    """A job ended by a signal exits as a shell reports it: 128 + the signal's number."""
    return 128 - code if code < 0 else code


def forward(path: str, entry: str, argv: list[str], pass_fds: Sequence[int] = ()) -> int:
    """Run the job in a process forked by the server at `path`; its exit code. OSError when the server
    cannot be reached (before anything ran)."""
    fds = _open_descriptors([0, 1, 2, *pass_fds])
    request = {
        "entry": entry,
        "argv": argv,
        "argv0": sys.argv[0],
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "fds": fds,
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        protocol.send(sock, request, fds)
        try:
            pid = int(protocol.receive(sock)[0]["pid"])
        except protocol.ProtocolError as err:
            raise ConnectionError(f"the fork server at {path} did not start the job: {err}") from None

        def pass_on(signum: int, _frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signum)

        for signum in FORWARDED_SIGNALS:
            signal.signal(signum, pass_on)
        try:
            reply = protocol.receive(sock)[0]
        except protocol.ProtocolError:
            print(f"gpurepro: the fork server at {path} went away while job {pid} ran", file=sys.stderr)
            return 1
    return _exit_code(int(reply["exit"]))


def run(entry: str, argv: list[str], pass_fds: Sequence[int] = ()) -> int:
    """Through the fork server when $GPUREPRO_FORKSERVER names one, else here. A server that cannot be
    reached is said so, and the job runs here."""
    path = os.environ.get(protocol.ENV_VAR)
    if path:
        try:
            return forward(path, entry, argv, pass_fds)
        except OSError as err:
            print(
                f"gpurepro: fork server {path} unreachable ({err}): this job starts its own interpreter",
                file=sys.stderr,
            )
    return in_process(entry, argv)


def gpurepro() -> int:
    """The `gpurepro` command."""
    return run(CLI_ENTRY, sys.argv[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpurepro.forkserver.client",
        description="Run ENTRY (module:function) with ARGS through the run's fork server, or here.",
    )
    parser.add_argument("--pass-fd", type=int, action="append", default=[], help="a descriptor the job needs")
    parser.add_argument("entry", help="module:function, called with the list of ARGS")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    return run(args.entry, args.args, args.pass_fd)


if __name__ == "__main__":
    sys.exit(main())
