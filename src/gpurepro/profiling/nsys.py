"""Nsight Systems: one traced run of a command (`nsys profile`) and its kernel summary (`nsys stats`).

Outputs, for a report stem S: `S.nsys-rep` (the trace, for the Nsight Systems GUI) and `S_kern_sum.csv`
(time per CUDA kernel, with a provenance sidecar). nsys writes into a fresh folder beside them, and each
file is then linked into place, which fails if it exists: a report is written once and never replaced.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import GpureproError, ResultExistsError
from ..results import ensure_absent, write_raw

TRACE = "cuda,nvtx,osrt"
KERNEL_REPORT = "cuda_gpu_kern_sum"


def missing_message(what: str) -> str:
    """The plain message for a machine without nsys."""
    return (
        f"nsys not found: {what} needs Nsight Systems (in the project's container image, or install "
        "nsight-systems-cli); nothing was profiled"
    )


def find_nsys() -> str | None:
    return shutil.which("nsys")


def require(what: str) -> str:
    """The nsys executable, or an error saying plainly that `what` needs it."""
    found = find_nsys()
    if found is None:
        raise GpureproError(missing_message(what))
    return found


def report_path(stem: Path | str) -> Path:
    return Path(f"{stem}.nsys-rep")


def kern_sum_path(stem: Path | str) -> Path:
    return Path(f"{stem}_kern_sum.csv")


def profile_argv(nsys: str, output_stem: Path, command: Sequence[str]) -> list[str]:
    """`nsys profile`: CUDA, NVTX and OS runtime traced; nsys appends .nsys-rep to the output name.
    Options are written `--name=value`, so a value can never be taken for the profiled program."""
    return [
        nsys,
        "profile",
        f"--output={output_stem}",
        f"--trace={TRACE}",
        "--force-overwrite=false",
        *command,
    ]


def stats_argv(nsys: str, report: Path, output_base: Path, sqlite: Path) -> list[str]:
    """`nsys stats`: the CUDA kernel summary as CSV, written to `<output_base>_cuda_gpu_kern_sum.csv`; the
    SQLite export it needs goes to `sqlite` (a scratch file) rather than beside the report."""
    return [
        nsys,
        "stats",
        f"--report={KERNEL_REPORT}",
        "--format=csv",
        f"--output={output_base}",
        f"--sqlite={sqlite}",
        str(report),
    ]


def nsys_version(nsys: str) -> str | None:
    """`nsys --version` prints e.g. "NVIDIA Nsight Systems version 2024.5.1.113-245134619542v0"."""
    try:
        out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"version\s+(\S+)", out)
    return match.group(1) if match else None


def _run(argv: list[str], what: str) -> None:
    """Run a step, its output into this log; fail with its last lines."""
    print("+ " + " ".join(argv), file=sys.stderr, flush=True)
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(result.stdout)
    if result.returncode != 0:
        tail = "\n".join(result.stdout.strip().splitlines()[-5:])
        raise GpureproError(f"{what} failed (exit status {result.returncode}):\n{tail}")


def _link_into_place(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except FileExistsError as err:
        raise ResultExistsError(f"{target} appeared while profiling; kept the existing file") from err


def profile(stem: Path | str, command: Sequence[str], provenance: dict[str, Any]) -> tuple[Path, Path]:
    """Trace `command` once with nsys and export its kernel summary; returns (report, kernel summary)."""
    nsys = require("gpurepro profile nsys")
    if not command:
        raise GpureproError("no command to profile: give it after --, e.g. -- gpurepro sgemm 1024 20 0")
    stem = Path(stem)
    report, kern_sum = report_path(stem), kern_sum_path(stem)
    ensure_absent(report, kern_sum)
    stem.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{stem.name}.", dir=stem.parent) as scratch:
        work = Path(scratch) / stem.name
        _run(profile_argv(nsys, work, command), "nsys profile (or the profiled command)")
        traced = report_path(work)
        if not traced.is_file():
            raise GpureproError(f"nsys profile finished but wrote no {traced.name}")
        _run(stats_argv(nsys, traced, work, Path(scratch) / "export.sqlite"), "nsys stats")
        exported = Path(f"{work}_{KERNEL_REPORT}.csv")
        if not exported.is_file():
            raise GpureproError(
                f"nsys stats found no CUDA kernels in the trace of {' '.join(command)} (did it run on a GPU?)"
            )
        kernels = pd.read_csv(exported)
        kernels.insert(0, "workload", stem.name)
        _link_into_place(traced, report)
        record = {
            **provenance,
            "nsys": {
                "version": nsys_version(nsys),
                "trace": TRACE,
                "report": report.name,
                "stats_report": KERNEL_REPORT,
                "profiled_command": list(command),
            },
        }
        write_raw(kernels, kern_sum, record)
    print(f"profiled: {report} and {kern_sum} ({len(kernels)} kernels)", file=sys.stderr)
    return report, kern_sum
