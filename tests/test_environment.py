"""Every GPUREPRO_* environment variable the code sets or reads is listed in gpurepro/environment.py, and
docs/environment.md shows that list."""

from __future__ import annotations

import re

from gpurepro.environment import VARIABLES, markdown_table

from .conftest import ROOT

NAME = re.compile(r"\bGPUREPRO_[A-Z][A-Z_]*[A-Z]\b")


def test_every_gpurepro_variable_is_listed() -> None:
    sources = [*(ROOT / "src").rglob("*.py"), *(ROOT / "workflow").rglob("*.smk"), ROOT / "Snakefile"]
    found = {name for path in sources for name in NAME.findall(path.read_text())}
    assert found - set(VARIABLES) == set()
    assert set(VARIABLES) - found == set(), "a listed variable nothing sets or reads"


def test_the_docs_table_is_the_one_environment_py_prints() -> None:
    """docs/environment.md shows the variables as the code lists them, so the page cannot drift."""
    page = (ROOT / "docs" / "environment.md").read_text()
    assert markdown_table() in page, "regenerate the table: python -m gpurepro.environment"
    documented = set(re.findall(r"^\| `(GPUREPRO_[A-Z_]+)` \|", page, flags=re.MULTILINE))
    assert documented == set(VARIABLES)
