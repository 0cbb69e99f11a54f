"""Misuse of a run ends in one clear line: the SLURM profile without its plugin, a GPU profile the machine
does not have, a run stopped by Ctrl-C or killed outright; and a finished run names its verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpurepro import profiles
from gpurepro.errors import GpureproError
from gpurepro.runs import gpu_check

from .conftest import HAVE_GPU, ROOT, run_snakemake
from .test_profiles import gpu

PLUGIN = "snakemake_executor_plugin_slurm"
# Snakemake as it runs where the SLURM executor plugin is not installed: the plugin can neither be found
# (importlib's find_spec, which the profile asks) nor listed among the executors (pkgutil, which
# Snakemake's plugin registry scans).
WITHOUT_SLURM_PLUGIN = f"""
import pkgutil, sys
sys.modules[{PLUGIN!r}] = None
every_module = pkgutil.iter_modules
pkgutil.iter_modules = lambda *args, **kwargs: (
    m for m in every_module(*args, **kwargs) if m.name != {PLUGIN!r}
)
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[1:]]
main()
"""


def test_the_slurm_profile_without_its_plugin_names_the_extra_in_one_line(workflow_copy: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_SLURM_PLUGIN, "--profile", "profiles/slurm", "-n"],
        cwd=workflow_copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    # Snakemake's own line naming the profiles it read, then ours alone: no usage, no "invalid choice"
    assert result.stderr.strip().splitlines()[1:] == [
        "profiles/slurm needs the SLURM executor plugin, which the project's slurm extra installs: "
        "pip install -e '.[slurm]'"
    ]


def test_the_slurm_extra_brings_the_plugin_and_the_test_extra_brings_the_slurm_extra() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'slurm = ["snakemake-executor-plugin-slurm' in pyproject
    test_extra = pyproject[pyproject.index("\ntest = [") :].split("]\n", 1)[0]
    assert '"gpurepro[slurm]"' in test_extra
    assert "pip install -c constraints.txt -e '.[slurm]'" in (ROOT / "README.md").read_text()


H100 = profiles.load_profile("h100")
NO_NVML = "NVML could not start (NVML Shared Library Not Found); no NVIDIA driver or GPU here"


def test_a_gpu_profile_without_nvml_stops_naming_the_device_and_what_nvml_found() -> None:
    with pytest.raises(GpureproError) as stopped:
        gpu_check.check_start(H100, "all", [], NO_NVML, "error")
    message = str(stopped.value)
    assert message.startswith(
        f"device=h100 needs an NVIDIA GPU of that model, but NVML finds none here: {NO_NVML}"
    )
    assert "snakemake -n --config device=h100" in message
    assert "\n" not in message


def test_gpus_that_do_not_exist_stop_the_run_and_warn_mode_does_not_excuse_them() -> None:
    found = [gpu("NVIDIA H100 80GB HBM3", 0), gpu("NVIDIA H100 80GB HBM3", 1)]
    with pytest.raises(
        GpureproError, match=r"device=h100: config gpus=\[0, 1, 2, 3\]: GPU\(s\) \[2, 3\] do not"
    ):
        gpu_check.check_start(H100, [0, 1, 2, 3], found, "", "warn")
    assert gpu_check.check_start(H100, [1], found, "", "error") == []
    assert gpu_check.check_start(H100, "all", found, "", "error") == []


def test_another_model_stops_the_run_unless_device_check_is_warn() -> None:
    found = [gpu("NVIDIA H100 80GB HBM3", 0), gpu("NVIDIA A100-SXM4-80GB", 1)]
    with pytest.raises(GpureproError, match="device=h100: GPU 1 is 'NVIDIA A100-SXM4-80GB' .profile 'a100'."):
        gpu_check.check_start(H100, "all", found, "", "error")
    assert gpu_check.check_start(H100, [0], found, "", "error") == []
    [warning] = gpu_check.check_start(H100, "all", found, "", "warn")
    assert warning.startswith("device=h100: GPU 1 is 'NVIDIA A100-SXM4-80GB'")


def test_the_cpu_profile_needs_no_gpu() -> None:
    assert gpu_check.check_start(profiles.load_profile("cpu"), "all", [], NO_NVML, "error") == []


@pytest.mark.pipeline
@pytest.mark.skipif(HAVE_GPU, reason="checks a machine without NVML")
def test_a_real_run_for_a_gpu_not_here_stops_at_start_and_writes_nothing(workflow_copy: Path) -> None:
    """The plan is made (a dry run plans it too); the run stops before its first job, with one line."""
    result = run_snakemake("sgemm", "--cores", "1", "--config", "device=h100", cwd=workflow_copy)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("device=h100 needs an NVIDIA GPU of that model, but NVML finds none here: ")
    assert "Traceback" not in result.stderr + result.stdout
    assert not (workflow_copy / "results").exists()
    planned = run_snakemake(
        "sgemm", "-n", "--cores", "1", "--config", "device=h100", "gpus=[0,1]", cwd=workflow_copy
    )
    assert planned.returncode == 0, planned.stderr
    assert "sgemm_run" in planned.stdout
    assert not (workflow_copy / "results").exists()
