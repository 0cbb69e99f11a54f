"""The fork server's life in a Snakemake run: started by the run's `onstart` (before any job), named to
the jobs through $GPUREPRO_FORKSERVER, stopped by `onsuccess`/`onerror`; it also leaves by itself when
the Snakemake process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import protocol

SERVER = "gpurepro.forkserver.server"
# Seconds the server may take to import its libraries before the run goes on without it.
START_TIMEOUT_S = 120.0


@dataclass
class ForkServer:
    process: subprocess.Popen[bytes]
    socket: Path
    log: Path

    def stop(self) -> None:
        """Stop the server (jobs it forked are not its children's concern: each ends with its client)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # busy forking: it goes at once, and is reaped with the run
            self.process.kill()
        self.socket.unlink(missing_ok=True)
        if os.environ.get(protocol.ENV_VAR) == str(self.socket):
            del os.environ[protocol.ENV_VAR]


def socket_path() -> Path:
    """A path short enough for a Unix socket (108 bytes), one per Snakemake process."""
    return Path(tempfile.gettempdir()) / f"gpurepro-forkserver-{os.getpid()}.sock"


def start(log: Path, timeout_s: float = START_TIMEOUT_S) -> ForkServer:
    """Start the server, wait until it listens, and name it in this process's environment (which the
    jobs inherit). RuntimeError, naming the log, when it does not come up."""
    path = socket_path()
    path.unlink(missing_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", SERVER, "--socket", str(path), "--parent", str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = ForkServer(process, path, log)
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"the fork server did not start within {timeout_s:.0f} s (its log: {log})")
        time.sleep(0.05)
    os.environ[protocol.ENV_VAR] = str(path)
    return server
