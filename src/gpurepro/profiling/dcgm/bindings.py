"""The DCGM Python bindings back-end: DCGM's own `DcgmReader`, which returns values keyed by field id
with DCGM's own timestamps. It connects to a running `nv-hostengine` (the nvidia-dcgm service) or else
starts one embedded in this process."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .fields import FIELDS, Sample
from .sampler import DcgmStartError

# Where DCGM installs its Python bindings: DCGM 4 packages, then DCGM 3 and older.
BINDINGS_DIRS = (
    Path("/usr/share/datacenter-gpu-manager-4/bindings/python3"),
    Path("/usr/local/dcgm/bindings/python3"),
)


def import_bindings() -> tuple[ModuleType | None, str]:
    """DCGM's DcgmReader module (importable as is, or from DCGM's install folders), with where it came from
    or why it is not there."""
    with contextlib.suppress(ImportError):
        return importlib.import_module("DcgmReader"), "DCGM Python bindings"
    for folder in BINDINGS_DIRS:
        if (folder / "DcgmReader.py").is_file():
            sys.path.append(str(folder))
            try:
                return importlib.import_module("DcgmReader"), f"DCGM Python bindings ({folder})"
            except ImportError as err:
                sys.path.remove(str(folder))
                return None, f"DCGM Python bindings in {folder} not importable ({err})"
    return None, "DCGM Python bindings not importable (looked in " + ", ".join(map(str, BINDINGS_DIRS)) + ")"


class BindingsSampler:
    """DcgmReader watching the fields; every second (and at the end) it fetches all values since the last
    fetch, each with DCGM's own timestamp, so the poll rate does not limit the sample rate."""

    POLL_S = 1.0

    def __init__(
        self, reader_module: ModuleType, source: str, gpu_indices: Sequence[int], interval_ms: int
    ) -> None:
        self._module = reader_module
        self._gpus = list(gpu_indices)
        self._interval_us = interval_ms * 1000
        self.description = source
        self._reader: Any = None
        self._samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: str | None = None

    def _connect(self, hostname: str | None) -> Any:
        reader = self._module.DcgmReader(
            hostname=hostname,
            fieldIds=[field.field_id for field in FIELDS],
            updateFrequency=self._interval_us,
            gpuIds=self._gpus,
            ignoreBlank=True,
            # DcgmReader deletes a field group of the same name on the host engine: one name per process
            # keeps two jobs sharing an nv-hostengine from deleting each other's watches.
            fieldGroupName=f"gpurepro_{os.getpid()}",
        )
        try:
            reader.InitWrapped()  # raises where Init() would only log
            reader.GetAllGpuValuesAsDictSinceLastCall(True)  # the first call sets the "since" point
        except Exception:
            reader.Shutdown()
            raise
        return reader

    def start(self) -> None:
        errors = []
        # A running nv-hostengine first (the nvidia-dcgm service), else one embedded in this process.
        for hostname, what in (("localhost", "nv-hostengine on localhost"), (None, "embedded host engine")):
            try:
                self._reader = self._connect(hostname)
            except Exception as err:  # DCGM raises its own error classes, one per status code
                errors.append(f"{what}: {err}")
                continue
            self.description += f", {what}"
            break
        else:
            raise DcgmStartError("DCGM Python bindings could not start: " + "; ".join(errors))
        self._thread = threading.Thread(target=self._poll_loop, name="gpurepro-dcgm", daemon=True)
        self._thread.start()

    def _fetch(self) -> None:
        values = self._reader.GetAllGpuValuesAsDictSinceLastCall(True)
        for gpu, fields in values.items():
            for field_id, samples in fields.items():
                for sample in samples:
                    self._samples.append((sample.ts / 1e6, int(gpu), int(field_id), float(sample.value)))

    def _poll_loop(self) -> None:
        while not self._stop.wait(self.POLL_S):
            try:
                self._fetch()
            except Exception as err:
                self._error = str(err)
                return

    def stop(self) -> list[Sample]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._reader is not None:
            try:
                if self._error is None:
                    self._fetch()
            finally:
                self._reader.Shutdown()
        if self._error:
            print(f"DCGM sampling stopped early: {self._error}", file=sys.stderr)
        return list(self._samples)
