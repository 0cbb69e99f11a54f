"""The MPS control daemon for one `mps` point: started by the run, in private pipe and log directories,
and always told to quit afterwards. The GPU's compute mode is read by nobody here and never changed:
MPS clients share the GPU in the default compute mode too."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MPS_CONTROL = "nvidia-cuda-mps-control"


class MpsUnavailable(Exception):
    """MPS cannot run here; the message says why (the point is then recorded as skipped or failed)."""


def control_binary() -> str:
    """The path of nvidia-cuda-mps-control, or MpsUnavailable saying it is not installed."""
    binary = shutil.which(MPS_CONTROL)
    if binary is None:
        raise MpsUnavailable(f"{MPS_CONTROL} not found")
    return binary


def _log_tail(log_dir: Path) -> str:
    log = log_dir / "control.log"
    return log.read_text(errors="replace").strip()[-500:] if log.is_file() else "(no control.log)"


@contextmanager
def mps_daemon(binary: str, start_timeout_s: float = 30.0) -> Iterator[dict[str, str]]:
    """Run the daemon for the duration of the with-block; yields the environment its clients need."""
    with tempfile.TemporaryDirectory(prefix="gpurepro-mps-") as tmp:
        pipe_dir, log_dir = Path(tmp, "pipe"), Path(tmp, "log")
        pipe_dir.mkdir()
        log_dir.mkdir()
        env = {"CUDA_MPS_PIPE_DIRECTORY": str(pipe_dir), "CUDA_MPS_LOG_DIRECTORY": str(log_dir)}
        full_env = {**os.environ, **env}
        started = subprocess.run([binary, "-d"], env=full_env, capture_output=True, text=True, timeout=60)
        if started.returncode != 0:
            raise MpsUnavailable(
                f"{MPS_CONTROL} -d failed (exit {started.returncode}): "
                f"{(started.stderr or started.stdout).strip()[-300:]} {_log_tail(log_dir)}"
            )
        try:
            deadline = time.monotonic() + start_timeout_s
            while not (pipe_dir / "control").exists():  # the daemon's control pipe: it is listening
                if time.monotonic() > deadline:
                    raise MpsUnavailable(
                        f"{MPS_CONTROL} started but made no control pipe in {start_timeout_s:.0f} s: "
                        f"{_log_tail(log_dir)}"
                    )
                time.sleep(0.1)
            yield env
        finally:
            subprocess.run([binary], input="quit\n", env=full_env, capture_output=True, text=True, timeout=60)
