"""Shared fixtures: the checkout's root, and a skip marker for tests that need a real NVIDIA GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro import nvml

ROOT = Path(__file__).resolve().parents[1]
HAVE_GPU, NO_GPU_REASON = nvml.available()
if not HAVE_GPU:  # Triton kernels (gpurepro.hfta.conv_triton) run in Triton's interpreter on the CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")

needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"needs an NVIDIA GPU: {NO_GPU_REASON}")


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """A copy of the workflow (Snakefile, rules, schemas, config, profiles, package source) to run in."""
    for item in ["Snakefile", "workflow", "config", "profiles", "src", "kernels"]:
        source = ROOT / item
        if source.is_dir():
            shutil.copytree(source, tmp_path / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tmp_path / item)
    return tmp_path


def run_gpurepro(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpurepro", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def run_snakemake(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True, timeout=1800
    )
