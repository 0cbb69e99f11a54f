"""A source whose versions state different figures names them all and the one its claims judge (issue 42):
SC22's arXiv v3 (five clusters, 8% (max 22%)) and proceedings abstract (four clusters, 32% (max 72%))."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpurepro.errors import GpureproError
from gpurepro.hardware import load_hardware
from gpurepro.verdict import render
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.here import Here
from gpurepro.verdict.loading import load_claims

from .conftest import ROOT
from .test_verdict import HARDWARE, SCHEMA, claim

SC22 = ROOT / "config" / "expected" / "sc22_variability.yaml"
VERSIONS = [
    {"name": "arXiv v3", "url": "https://arxiv.org/abs/1", "says": "8% (max 22%)"},
    {"name": "proceedings", "says": "32% (max 72%)"},
]


def test_the_sc22_claims_name_both_versions_and_judge_arxiv_v3() -> None:
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = load_claims([SC22], SCHEMA, hardware)
    source = claims[0].source
    assert source["judged"] == "arXiv:2208.11035 v3"
    (v3, proceedings) = source["versions"]
    assert v3["name"] == "arXiv:2208.11035 v3" and "8% (max 22%)" in v3["says"] and "1.5x" in v3["says"]
    assert "five clusters" in v3["says"] and "four clusters" in proceedings["says"]
    assert proceedings["name"].startswith("SC22 proceedings") and "32% (max 72%)" in proceedings["says"]
    assert "These claims judge the arXiv v3 figures" in source["note"]
    assert {c.source["judged"] for c in claims} == {"arXiv:2208.11035 v3"}  # every claim of the file
    page = render.markdown(evaluate(claims, {}, hardware), "h100", Here.of({}))
    assert (
        "- versions of the source: arXiv:2208.11035 v3 (judged here): five clusters (one of them AMD): "
        '"8% (max 22%) average performance variation"'
    ) in page
    assert 'SC22 proceedings (abstract): four clusters: "32% (max 72%) average performance variation"' in page


def _write(folder: Path, source: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "claims.yaml"
    path.write_text(yaml.safe_dump({"source": {"title": "a paper", **source}, "claims": [claim()]}))
    return path


@pytest.fixture
def hardware(tmp_path: Path) -> dict:
    folder = tmp_path / "hardware"
    folder.mkdir()
    for gpu, entry in HARDWARE.items():
        (folder / f"{gpu}.yaml").write_text(yaml.safe_dump(entry))
    return load_hardware(folder)


def test_versions_load_with_the_judged_one_and_why(tmp_path: Path, hardware: dict) -> None:
    source = {"versions": VERSIONS, "judged": "arXiv v3", "note": "the full text"}
    (loaded,) = load_claims([_write(tmp_path / "ok", source)], SCHEMA, hardware)
    assert loaded.source["judged"] == "arXiv v3"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"versions": VERSIONS, "note": "why"}, "'judged' is a dependency of 'versions'"),
        ({"versions": VERSIONS, "judged": "arXiv v3"}, "'note' is a dependency of 'versions'"),
        ({"judged": "arXiv v3"}, "'versions' is a dependency of 'judged'"),
        ({"versions": VERSIONS[:1], "judged": "arXiv v3", "note": "why"}, "source.versions"),
        (
            {"versions": [{"name": "a"}, *VERSIONS], "judged": "a", "note": "why"},
            "'says' is a required property",
        ),
        (
            {"versions": VERSIONS, "judged": "v2", "note": "why"},
            "key source.judged: 'v2' is not one of the source's versions (arXiv v3, proceedings)",
        ),
    ],
)
def test_versions_without_the_judged_one_or_why_fail(
    tmp_path: Path, hardware: dict, source: dict[str, Any], message: str
) -> None:
    with pytest.raises(GpureproError, match="bad claim file") as error:
        load_claims([_write(tmp_path / "bad", source)], SCHEMA, hardware)
    assert message in str(error.value)
