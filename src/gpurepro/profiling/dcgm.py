"""DCGM profiling metrics (SM active, SM occupancy, tensor active, DRAM active, PCIe, framebuffer used)
sampled beside a measurement, where DCGM exists.

Two sources, the structured one first:

1. the DCGM Python bindings shipped with DCGM (`DcgmReader`), which return values keyed by field id with
   DCGM's own timestamps;
2. `dcgmi dmon`, whose text table is read by the names in its header line (each column named by the
   field's short name, e.g. SMACT), never by an assumed column order.

Both need a DCGM host engine: the bindings connect to a running `nv-hostengine` (the nvidia-dcgm service)
or else start one embedded in this process; `dcgmi` only talks to a running one. Profiling metrics use
the GPU's performance counters, which on many GPUs cannot be shared with another profiler: do not sample
them while Nsight Systems (with GPU metrics) or Nsight Compute profiles the same GPU.

DCGM numbers GPUs in NVML's order, so the NVML indices the measurement uses are passed on as DCGM GPU ids.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import pandas as pd

from ..results import ensure_absent, write_raw


@dataclass(frozen=True)
class Field:
    field_id: int
    name: str  # DCGM's field tag
    short_name: str  # the column name `dcgmi dmon` prints
    unit: str


# Field ids, tags and dmon short names from DCGM's dcgm_fields.h and dcgmlib/src/dcgm_fields.cpp (DCGM 4
# renamed the 100x constants, e.g. DCGM_FI_PROF_SM_ACTIVE to DCGM_FI_PROF_SM_UTIL_RATIO; the ids and
# short names stayed). Ratios are 0..1 of elapsed cycles; PCIe fields are a rate in bytes per second
# (DCGM user guide, profiling metrics); framebuffer used is in MiB ("MB" in dcgm_fields.h).
FIELDS: tuple[Field, ...] = (
    Field(1002, "sm_active", "SMACT", "ratio"),
    Field(1003, "sm_occupancy", "SMOCC", "ratio"),
    Field(1004, "tensor_active", "TENSO", "ratio"),
    Field(1005, "dram_active", "DRAMA", "ratio"),
    Field(1009, "pcie_tx_bytes", "PCITX", "B/s"),
    Field(1010, "pcie_rx_bytes", "PCIRX", "B/s"),
    Field(252, "fb_used", "FBUSD", "MiB"),
)
FIELD_BY_ID = {field.field_id: field for field in FIELDS}
COLUMNS = ["t_unix_s", "gpu", "field", "field_id", "value", "unit"]

# Where DCGM installs its Python bindings: DCGM 4 packages, then DCGM 3 and older.
BINDINGS_DIRS = (
    Path("/usr/share/datacenter-gpu-manager-4/bindings/python3"),
    Path("/usr/local/dcgm/bindings/python3"),
)
# How long `dcgmi dmon` may take to connect and set its watches before it prints its header.
DMON_START_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class DcgmStatus:
    available: bool
    reason: str  # why not, or what samples ("dcgmi dmon 3.3.5" / "DCGM Python bindings ...")

    @property
    def note(self) -> str:
        """The line a run's provenance and log carry."""
        return f"DCGM: {self.reason}" if self.available else f"DCGM not available: {self.reason}"


class DcgmStartError(Exception):
    """A DCGM source was found but could not start sampling (no host engine, no permission, ...)."""


Sample = tuple[float, int, int, float]  # (t_unix_s, gpu, field_id, value)


class _Sampler(Protocol):
    description: str

    def start(self) -> None: ...

    def stop(self) -> list[Sample]: ...


# ---------------------------------------------------------------------------------------------------
# dcgmi dmon


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


class DmonParser:
    """Turns `dcgmi dmon` output lines into samples, reading each column's field from the header.

    The format (DCGM's dcgmi/DeviceMonitor.cpp): a header line `#Entity` (`# Entity` before DCGM 3) and
    one short name per column, then a line of units starting `ID`, then one row per entity and round,
    `GPU <id>` followed by one value per column (`N/A` when blank); the header repeats every 14 rounds.
    Rows carry no time: a row is stamped when read, as dmon flushes its output after every round.
    """

    def __init__(self, fields: Sequence[Field] = FIELDS) -> None:
        self._by_short_name = {field.short_name: field.field_id for field in fields}
        self.columns: list[int | None] | None = None
        self.samples: list[Sample] = []
        self.other_lines: deque[str] = deque(maxlen=20)  # errors and messages, for diagnostics

    @property
    def saw_header(self) -> bool:
        return self.columns is not None

    def feed(self, line: str, t_unix_s: float) -> None:
        tokens = line.split()
        if not tokens:
            return
        if tokens[0].startswith("#"):
            names = [tokens[0].lstrip("#"), *tokens[1:]]
            names = [name for name in names if name]
            if names and names[0].lower() == "entity":
                columns = [self._by_short_name.get(name) for name in names[1:]]
                if any(column is not None for column in columns):
                    self.columns = columns
                    return
            self.other_lines.append(line.strip())
            return
        if tokens[0].lower() == "id":
            return  # the units line under the header
        if self.columns is None or tokens[0] != "GPU" or len(tokens) < 2 or not tokens[1].isdigit():
            self.other_lines.append(line.strip())
            return
        values = tokens[2:]
        if len(values) != len(self.columns):
            self.other_lines.append(f"row does not match the header's {len(self.columns)} columns: {line}")
            return
        gpu = int(tokens[1])
        for field_id, text in zip(self.columns, values, strict=True):
            if field_id is None or text == "N/A":
                continue
            try:
                self.samples.append((t_unix_s, gpu, field_id, float(text)))
            except ValueError:
                self.other_lines.append(f"not a number for field {field_id}: {text!r}")


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


# ---------------------------------------------------------------------------------------------------
# DCGM Python bindings


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


# ---------------------------------------------------------------------------------------------------
# Choosing a source and recording


def _candidates(gpu_indices: Sequence[int], interval_ms: int) -> tuple[list[_Sampler], list[str]]:
    """Samplers to try, structured source first, and why the others are not there."""
    samplers: list[_Sampler] = []
    missing: list[str] = []
    module, source = import_bindings()
    if module is not None:
        samplers.append(BindingsSampler(module, source, gpu_indices, interval_ms))
    else:
        missing.append(source)
    executable = shutil.which("dcgmi")
    if executable is not None:
        samplers.append(DmonSampler(gpu_indices, interval_ms, dcgmi_version(executable)))
    else:
        missing.insert(0, "dcgmi not found on PATH")
    return samplers, missing


def dcgm_status() -> DcgmStatus:
    """Which DCGM source exists here (without starting it); the reason when none does."""
    samplers, missing = _candidates([0], 1000)
    if samplers:
        return DcgmStatus(True, samplers[0].description)
    return DcgmStatus(False, " and ".join(missing))


def samples_frame(samples: Sequence[Sample]) -> pd.DataFrame:
    """The tidy table: one row per GPU, field and sample time."""
    rows = [
        {
            "t_unix_s": t,
            "gpu": gpu,
            "field": FIELD_BY_ID[field_id].name,
            "field_id": field_id,
            "value": value,
            "unit": FIELD_BY_ID[field_id].unit,
        }
        for t, gpu, field_id, value in samples
        if field_id in FIELD_BY_ID
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["t_unix_s", "gpu", "field_id"], kind="stable").reset_index(drop=True)


@contextlib.contextmanager
def dcgm_monitor(gpu_indices: Sequence[int], out_path: Path, interval_ms: int = 100) -> Iterator[DcgmStatus]:
    """Samples the profiling fields on those GPUs into out_path (tidy CSV: t_unix_s, gpu, field, field_id,
    value, unit) for the duration of the with-block; when unavailable, writes nothing and yields the status.

    The file is written once the block ends (never over an existing file, with a provenance sidecar); when
    the block raises, the sampler is stopped and nothing is written, so a rerun of the failed measurement
    is not refused for a file of the failed one.
    """
    if interval_ms < 1:
        raise ValueError(f"interval_ms must be 1 or more, got {interval_ms}")
    out_path = Path(out_path)
    if not gpu_indices:
        yield DcgmStatus(False, "no GPU to sample (DCGM reads NVIDIA GPUs only)")
        return
    samplers, missing = _candidates(gpu_indices, interval_ms)
    if not samplers:
        yield DcgmStatus(False, " and ".join(missing))
        return
    ensure_absent(out_path)
    failures = []
    for sampler in samplers:
        try:
            sampler.start()
        except DcgmStartError as err:
            failures.append(str(err))
            continue
        break
    else:
        yield DcgmStatus(False, "; ".join(failures))
        return
    status = DcgmStatus(True, sampler.description)
    started = time.time()
    try:
        yield status
    except BaseException:
        sampler.stop()
        raise
    samples = sampler.stop()
    sidecar = {
        "dcgm": {
            "source": sampler.description,
            "gpus": list(gpu_indices),
            "interval_ms": interval_ms,
            "fields": {field.field_id: f"{field.name} ({field.unit})" for field in FIELDS},
            "start_unix_s": started,
            "end_unix_s": time.time(),
            "samples": len(samples),
            "gpu_numbering": "DCGM GPU ids, in NVML's order",
        },
        "host": socket.gethostname(),
        "command": sys.argv,
    }
    write_raw(samples_frame(samples), out_path, sidecar)
    print(f"DCGM: {len(samples)} values from {sampler.description} in {out_path}", file=sys.stderr)


def dcgm_out_path(requested: str | None, trace_out: str | None, out: str | None) -> Path | None:
    """Where a measurement's DCGM samples go: the path given, or for `auto` `<stem>.dcgm.csv` beside the
    telemetry trace (`<stem>.telemetry.csv`) or the raw table; None when not requested or nowhere to go."""
    if requested is None or requested == "off":
        return None
    if requested != "auto":
        return Path(requested)
    beside = trace_out or out
    if beside is None:
        return None
    path = Path(beside)
    stem = path.name.removesuffix(".csv").removesuffix(".telemetry")
    return path.with_name(f"{stem}.dcgm.csv")


@contextlib.contextmanager
def monitor_if_requested(gpu_indices: Sequence[int], out_path: Path | None) -> Iterator[dict[str, Any]]:
    """dcgm_monitor when a path is given; yields what the run's provenance records about DCGM, and says on
    stderr when DCGM is not there."""
    if out_path is None:
        yield {"available": False, "note": "DCGM not requested"}
        return
    with dcgm_monitor(gpu_indices, out_path) as status:
        if not status.available:
            print(status.note, file=sys.stderr)
        yield {
            "available": status.available,
            "reason": status.reason,
            "file": out_path.name if status.available else None,
            "note": status.note,
        }
