"""Every GPUREPRO_* environment variable the code sets or reads is listed in gpurepro/environment.py."""

from __future__ import annotations

import re

from gpurepro.environment import VARIABLES

from .conftest import ROOT

NAME = re.compile(r"\bGPUREPRO_[A-Z][A-Z_]*[A-Z]\b")


def test_every_gpurepro_variable_is_listed() -> None:
    sources = [*(ROOT / "src").rglob("*.py"), *(ROOT / "workflow").rglob("*.smk"), ROOT / "Snakefile"]
    found = {name for path in sources for name in NAME.findall(path.read_text())}
    assert found - set(VARIABLES) == set()
    assert set(VARIABLES) - found == set(), "a listed variable nothing sets or reads"
