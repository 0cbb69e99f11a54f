"""The `dcgmi dmon` back-end: dmon as a child process sampling the fields, its output read by a thread
(dmon_parser.py). `dcgmi` only talks to a running DCGM host engine (`nv-hostengine`, the nvidia-dcgm
service); without one, dmon ends before its header and the monitor is told why."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from .dmon_parser import DmonParser
from .fields import FIELDS, Field, Sample
from .sampler import DcgmStartError

# How long `dcgmi dmon` may take to connect and set its watches before it prints its header.
DMON_START_TIMEOUT_S = 15.0


def dmon_argv(gpu_indices: Sequence[int], interval_ms: int, fields: Sequence[Field] = FIELDS) -> list[str]:
    """`dcgmi dmon -e <field ids> -i <gpus> -d <ms>`: the fields, on those GPUs, every interval_ms."""
    return [
        "dcgmi",
        "dmon",
        "-e",
        ",".join(str(field.field_id) for field in fields),
        "-i",
        ",".join(str(gpu) for gpu in gpu_indices),
        "-d",
        str(interval_ms),
    ]


def dcgmi_version(executable: str) -> str | None:
    """`dcgmi --version` prints e.g. "dcgmi  version: 3.3.5"; None where it says nothing usable."""
    try:
        out = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"version:\s*(\S+)", out)
    return match.group(1) if match else None


class DmonSampler:
    """`dcgmi dmon` as a child process, its output read by a thread; stopped on exit, also on errors."""

    def __init__(self, gpu_indices: Sequence[int], interval_ms: int, version: str | None) -> None:
        self.argv = dmon_argv(gpu_indices, interval_ms)
        self.description = f"dcgmi dmon {version}" if version else "dcgmi dmon"
        self.parser = DmonParser()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._header = threading.Event()

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self.parser.feed(line, time.time())
            if self.parser.saw_header:
                self._header.set()

    def start(self) -> None:
        try:
            self._process = subprocess.Popen(
                self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
            )
        except OSError as err:
            raise DcgmStartError(f"cannot run {' '.join(self.argv)}: {err}") from err
        self._reader = threading.Thread(target=self._read, name="gpurepro-dcgmi", daemon=True)
        self._reader.start()
        # dmon prints its header once connected and watching; an error (no host engine, no permission)
        # ends it first.
        deadline = time.monotonic() + DMON_START_TIMEOUT_S
        while not self._header.wait(0.05):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                said = " | ".join(self.parser.other_lines) or "no output"
                raise DcgmStartError(
                    f"{' '.join(self.argv)} did not start sampling (exit status {self._process.returncode}): "
                    f"{said}"
                )

    def stop(self) -> list[Sample]:
        process = self._process
        if process is not None and process.poll() is not None and self.parser.saw_header:
            said = " | ".join(list(self.parser.other_lines)[-3:]) or "no message"
            print(f"dcgmi dmon ended early (exit status {process.returncode}): {said}", file=sys.stderr)
        if process is not None and process.poll() is None:
            # SIGINT first: dmon handles it, leaves its loop and disconnects from the host engine, which
            # then drops its watches; terminate and kill only if it does not end.
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
        if process is not None and process.stdout is not None:
            process.stdout.close()
        return list(self.parser.samples)
