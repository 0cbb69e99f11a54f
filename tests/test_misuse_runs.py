"""Misuse of a run ends in one clear line: the SLURM profile without its plugin, a GPU profile the machine
does not have, a run stopped by Ctrl-C or killed outright; and a finished run names its verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

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
