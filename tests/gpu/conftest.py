"""Fixtures of the GPU tier: the SGEMM binaries built from kernels/ (once a session), the card's
datasheet and power limits (limits.py), and the measuring commands, each run once a session with quick
settings and read by every test that bounds one of its figures."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gpurepro.results import read_sidecar
from tests.conftest import missing_installable

from . import limits

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "kernels" / "Makefile"


KERNELS_HINT = "pip install -e '.[kernels]' (the nvidia-cublas and nvidia-curand wheels; '.[test]' has it)"


def gpu_arch() -> str | None:
    """sm_XY of GPU 0, or None without a usable NVIDIA GPU."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
    except (subprocess.SubprocessError, OSError):
        return None
    return "sm_" + out[0].replace(".", "") if out else None


GPU_ARCH = gpu_arch()


def nvcc_supports(arch: str) -> bool:
    proc = subprocess.run(["nvcc", "--list-gpu-code"], capture_output=True, text=True, timeout=60)
    return arch in proc.stdout.split()


def make(*targets: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """make -f kernels/Makefile with PYTHON set to this interpreter, whose nvidia-* wheels '.[test]'
    installed (PYTHON=... in the environment names another)."""
    settings = {"PYTHON": os.environ.get("PYTHON", sys.executable), **variables}
    return subprocess.run(
        ["make", "-f", str(MAKEFILE), *(f"{key}={value}" for key, value in settings.items()), *targets],
        capture_output=True,
        text=True,
        timeout=900,
    )


def check_built(proc: subprocess.CompletedProcess[str]) -> None:
    """A build without cuBLAS/cuRAND skips with the Makefile's reason and hint, and fails under CI;
    any other failure fails."""
    if proc.returncode != 0 and "not found under" in proc.stderr:
        reason = re.sub(r"^.*?\*\*\* |\.?\s+Stop\.$", "", proc.stderr.strip().splitlines()[-1])
        missing_installable(f"cuBLAS or cuRAND of the kernel build (make: {reason})", KERNELS_HINT)
    assert proc.returncode == 0, f"make failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory):
    """build(arch, full) -> build directory for arch, made once per session: with full,
    gen_data and sgemm; otherwise only the tiled kernels' object file (faster)."""
    done: dict[tuple[str, bool], Path] = {}

    def build(arch: str, full: bool = True) -> Path:
        if (arch, full) in done:
            return done[(arch, full)]
        if not full and (arch, True) in done:
            return done[(arch, True)]
        if not nvcc_supports(arch):
            pytest.skip(f"this nvcc cannot build {arch} (CUDA 13 dropped sm_70)")
        out = tmp_path_factory.mktemp(arch)
        target = "all" if full else f"{out}/obj/tiled_sgemm.o"
        check_built(make("-j8", target, ARCH=arch, BUILD_DIR=str(out)))
        done[(arch, full)] = out
        return out

    return build


@pytest.fixture(scope="session")
def bin_dir(builds) -> Path:
    """Binaries for the local GPU, or for sm_90 where there is none (host-only tests).

    SGEMM_BIN_DIR=dir tests binaries built there instead (e.g. by the benchmark).
    """
    prebuilt = os.environ.get("SGEMM_BIN_DIR")
    return Path(prebuilt).resolve() if prebuilt else builds(GPU_ARCH or "sm_90")


# Quick telemetry for the measuring commands: no cool-down wait, half a second of idle baseline, and
# energy windows of one second: ten updates of NVML's counter, coarse for a figure a study reports but
# enough for a bound (limits.assert_energy allows one update at each edge).
QUICK = ["--idle-seconds", "0.5", "--energy-window-s", "1", "--cooldown-max-wait-s", "0"]
GPUREPRO = [sys.executable, "-m", "gpurepro"]


@dataclass(frozen=True)
class Run:
    """What one measuring command filed: its raw table, the sidecar, the telemetry trace where it
    writes one, and its log."""

    table: pd.DataFrame
    sidecar: dict[str, Any]
    trace: pd.DataFrame | None
    log: str

    def ok(self) -> pd.DataFrame:
        """The raw rows, after checking the point was measured rather than recorded as failed."""
        if "status" in self.table:
            failed = self.table[self.table["status"] != "ok"]
            assert failed.empty, f"point not measured: {failed[['status', 'reason']].to_dict('records')}"
        return self.table

    def energy(self) -> dict[str, Any]:
        return self.sidecar["measurement"]["energy"][str(limits.GPU)]


@pytest.fixture(scope="session")
def card() -> limits.Card:
    """GPU 0's limits; skips the test where its datasheet figures are not in config/hardware/."""
    found = limits.card()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Run]:
    """measure(command, trace=True) -> Run: the command (e.g. GPUREPRO + ['sgemm', ...]) with
    --device-check warn, --out and, with trace, --trace-out, run once a session; later calls with the
    same command read that run again. A command that fails fails every test that reads it."""
    runs: dict[tuple[tuple[str, ...], bool], tuple[subprocess.CompletedProcess[str], Path]] = {}

    def measure(command: Sequence[str], trace: bool = True) -> Run:
        key = (tuple(command), trace)
        if key not in runs:
            folder = tmp_path_factory.mktemp("run")
            files = ["--out", str(folder / "raw.csv")]
            files += ["--trace-out", str(folder / "raw.telemetry.csv")] if trace else []
            result = subprocess.run(
                [*command, "--device-check", "warn", *files], capture_output=True, text=True, timeout=600
            )
            runs[key] = (result, folder)
        result, folder = runs[key]
        assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr[-4000:]}"
        raw = folder / "raw.csv"
        traced = pd.read_csv(folder / "raw.telemetry.csv") if trace else None
        return Run(pd.read_csv(raw), read_sidecar(raw), traced, result.stderr)

    return measure
