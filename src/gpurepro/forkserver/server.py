"""The fork server: `python -m gpurepro.forkserver.server --socket PATH --parent PID`.

It imports the libraries every job needs (PRELOAD), then listens on PATH. For each connection it forks a
manager, which forks the job (the runner) and reports the runner's pid and, when it ends, its exit code
to the client. The server itself stays single-threaded and never initialises CUDA or NVML: a fork is
only safe from a process that has not (a forked CUDA context is unusable). It leaves when its parent
(the Snakemake run) is gone, or on SIGTERM.

The runner takes the client's descriptors (its stdin, stdout, stderr and passed pipes, at the numbers
they had there), working folder, environment and argv[0], reseeds what a new interpreter would seed
differently, and calls the requested entry point with the arguments: the job cannot tell it from one
started in a new interpreter, but for the seconds it did not spend importing.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import gc
import importlib
import io
import os
import random
import select
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from . import protocol

# What the jobs import, heaviest first; a library that is not installed is left out (its jobs import
# it themselves, or fail as they would without a server).
PRELOAD = (
    "torch",
    "torchvision",
    "timm",
    "timm.models.vision_transformer",
    "transformers",
    "transformers.models.bert.modeling_bert",
    "pandas",
    "scipy.stats",
    "gpurepro.plotting",
    "gpurepro.cli",
    "gpurepro.hfta_study.worker",
    "gpurepro.inference.models",
)
# Seconds between checks that the parent is still there.
PARENT_CHECK_S = 1.0
# Seconds a job is given to leave after SIGTERM when its client is gone, before SIGKILL.
KILL_GRACE_S = 10.0


def preload(modules: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import each module; the names of those that could not be imported (with why) are returned."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - any import failure only means the job imports it itself
            missing.append(f"{name} ({type(err).__name__}: {err})")
    return missing


def _listen(path: Path) -> socket.socket:
    """A socket listening at `path`; it appears there only once it accepts connections (bound under a
    temporary name, then renamed), so a client never meets a socket that refuses it."""
    staging = path.with_name(path.name + ".starting")
    staging.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(staging))
    os.chmod(staging, 0o600)
    sock.listen(128)
    os.replace(staging, path)
    return sock


def serve(path: Path, parent: int) -> None:
    missing = preload()
    if missing:
        print(f"fork server: not preloaded (jobs import them themselves): {'; '.join(missing)}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Managers are reaped by the kernel; the server never waits for them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    # What is imported now stays shared with every fork: keep the collector from touching (copying) it.
    gc.collect()
    gc.freeze()
    sock = _listen(path)
    sock.settimeout(PARENT_CHECK_S)
    print(f"fork server: pid {os.getpid()} listening at {path}", flush=True)
    try:
        while os.getppid() == parent:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                sock.close()
                _manage(conn)
            conn.close()
    finally:
        sock.close()
        path.unlink(missing_ok=True)


def _manage(conn: socket.socket) -> NoReturn:
    """In the forked manager: start the job, tell the client its pid, then its exit code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        conn.settimeout(None)
        request, fds = protocol.receive(conn)
        request["server_pid"] = str(os.getppid())
        runner = os.fork()
        if runner == 0:
            conn.close()
            _run(request, fds)
        for fd in fds:
            os.close(fd)
        protocol.send(conn, {"pid": runner})
        protocol.send(conn, {"exit": _wait(runner, conn)})
    except BaseException:  # noqa: BLE001 - the manager must never return into the server's loop
        traceback.print_exc()
    finally:
        os._exit(0)


def _wait(runner: int, conn: socket.socket) -> int:
    """The runner's exit code (negative: the signal that ended it). A client that goes away (killed by
    Snakemake, the user's Ctrl-C) takes the job with it: its process group gets SIGTERM, then SIGKILL."""
    ended = os.pidfd_open(runner)
    try:
        while True:
            readable, _, _ = select.select([ended, conn], [], [])
            if ended in readable:
                return os.waitstatus_to_exitcode(os.waitpid(runner, 0)[1])
            if not conn.recv(1):
                _kill_group(runner)
                return os.waitstatus_to_exitcode(os.waitpid(runner, 0)[1])
    finally:
        os.close(ended)


def _kill_group(runner: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(runner, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < deadline:
        if os.waitpid(runner, os.WNOHANG)[0]:
            with contextlib.suppress(ProcessLookupError):  # its children, if they outlived it
                os.killpg(runner, signal.SIGKILL)
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(runner, signal.SIGKILL)


def _place_descriptors(fds: list[int], targets: list[int]) -> None:
    """Put each received descriptor at the number it had in the client (moved out of the way first, so
    one never lands on another not yet placed)."""
    parked = [fcntl.fcntl(fd, fcntl.F_DUPFD, 256) for fd in fds]
    for fd in fds:
        os.close(fd)
    for fd, target in zip(parked, targets, strict=True):
        os.dup2(fd, target)
        os.close(fd)


def _fresh_stdio() -> None:
    """Text streams over descriptors 0-2 as a new interpreter would open them (the server's were for its
    own log)."""
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)


def _reseed() -> None:
    """What a new interpreter seeds afresh: Python's and numpy's generators from the OS, torch's to its
    fixed start-up seed (a job that seeds them itself is unaffected)."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(torch.initial_seed())
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))


def _run(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """In the forked runner: become the client's job and run its entry point."""
    code = 1
    try:
        os.setpgid(0, 0)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _place_descriptors(fds, request["fds"])
        _fresh_stdio()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"], **{protocol.FORKED_VAR: request["server_pid"]})
        sys.argv = [request["argv0"], *request["argv"]]
        gc.unfreeze()
        _reseed()
        module, _, function = request["entry"].partition(":")
        code = getattr(importlib.import_module(module), function)(request["argv"])
        code = 0 if code is None else code
    except SystemExit as stop:
        code = stop.code
    except BaseException:  # noqa: BLE001 - reported as a new interpreter would report it
        traceback.print_exc()
        code = 1
    finally:
        os._exit(_finish(code))


def _finish(code: object) -> int:
    """Run the job's exit handlers and flush its output, as an interpreter's exit would; the exit code."""
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return int(code or 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpurepro.forkserver.server")
    parser.add_argument("--socket", type=Path, required=True, help="where to listen")
    parser.add_argument("--parent", type=int, required=True, help="leave when this process is gone")
    args = parser.parse_args(argv)
    try:
        serve(args.socket, args.parent)
    finally:
        # Not the interpreter's own exit: finalising what gc.freeze() kept (every preloaded library)
        # takes seconds and makes some bindings report leaks.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
