"""Sampling DCGM for the length of a with-block: the back-ends tried in order, the structured one first
(the bindings, then `dcgmi dmon`), the first that starts samples, and its samples are written once the
block ends as a tidy CSV with a provenance sidecar. Where none exists or none starts, the status says
why and nothing is written.

Profiling metrics use the GPU's performance counters, which on many GPUs cannot be shared with another
profiler: do not sample them while Nsight Systems (with GPU metrics) or Nsight Compute profiles the same
GPU. DCGM numbers GPUs in NVML's order, so the NVML indices the measurement uses are passed on as DCGM
GPU ids."""

from __future__ import annotations

import contextlib
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...results import ensure_absent, write_raw
from .bindings import BindingsSampler, import_bindings
from .dmon import DmonSampler, dcgmi_version
from .fields import FIELDS, samples_frame
from .sampler import DcgmStartError, Sampler


@dataclass(frozen=True)
class DcgmStatus:
    available: bool
    reason: str  # why not, or what samples ("dcgmi dmon 3.3.5" / "DCGM Python bindings ...")

    @property
    def note(self) -> str:
        """The line a run's provenance and log carry."""
        return f"DCGM: {self.reason}" if self.available else f"DCGM not available: {self.reason}"


def _candidates(gpu_indices: Sequence[int], interval_ms: int) -> tuple[list[Sampler], list[str]]:
    """Samplers to try, structured source first, and why the others are not there."""
    samplers: list[Sampler] = []
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
