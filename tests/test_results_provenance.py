"""Raw results are append-only with a provenance sidecar; provenance names commit, dirty flag and config."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from gpurepro import provenance
from gpurepro.errors import ResultExistsError
from gpurepro.results import ensure_absent, read_sidecar, sidecar_path, write_raw

from .conftest import ROOT


def test_write_raw_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "raw" / "x.csv"
    write_raw(pd.DataFrame({"a": [1, 2]}), path, {"who": "first"})
    assert sidecar_path(path).name == "x.provenance.json"
    assert read_sidecar(path)["who"] == "first" and read_sidecar(path)["file"] == "x.csv"
    with pytest.raises(ResultExistsError, match="never overwritten"):
        write_raw(pd.DataFrame({"a": [9]}), path, {"who": "second"})
    assert pd.read_csv(path)["a"].tolist() == [1, 2]
    assert read_sidecar(path)["who"] == "first"
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_ensure_absent_checks_the_sidecar_too(tmp_path: Path) -> None:
    path = tmp_path / "y.csv"
    sidecar_path(path).write_text("{}")
    with pytest.raises(ResultExistsError, match="y.provenance.json"):
        ensure_absent(path)


def test_config_hash_ignores_key_order_but_not_values() -> None:
    a = provenance.config_hash({"device": "h100", "telemetry": {"rate_hz": 50, "idle_seconds": 5}})
    b = provenance.config_hash({"telemetry": {"idle_seconds": 5, "rate_hz": 50}, "device": "h100"})
    c = provenance.config_hash({"device": "h100", "telemetry": {"rate_hz": 51, "idle_seconds": 5}})
    assert a == b != c


def test_git_state_sees_commit_and_dirty_flag(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f").write_text("1")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    clean = provenance.git_state(tmp_path)
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    (tmp_path / "f").write_text("2")
    assert provenance.git_state(tmp_path)["dirty"] is True
    assert provenance.git_state(tmp_path / "nope")["commit"] is None


def test_a_source_archive_says_the_commit_it_was_made_from(tmp_path: Path) -> None:
    """git archive writes the commit into src/gpurepro/source_commit.txt (.gitattributes export-subst),
    as a forge's tarball does: unpacked outside any checkout, the provenance names that commit and says
    that changes after unpacking are unknown; the project's own checkout keeps the placeholder."""
    repo, unpacked = tmp_path / "repo", tmp_path / "unpacked"
    (repo / provenance.ARCHIVE_COMMIT).parent.mkdir(parents=True)
    for name in (".gitattributes", str(provenance.ARCHIVE_COMMIT)):
        shutil.copy(ROOT / name, repo / name)

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
        return done.stdout.decode()

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    head = git("rev-parse", "HEAD").strip()
    unpacked.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", "HEAD"], check=True, capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(unpacked, filter="data")
    state = provenance.git_state(unpacked)
    assert state["commit"] == head and state["dirty"] is None and "source archive" in state["note"]
    assert (ROOT / provenance.ARCHIVE_COMMIT).read_text().strip() == "$Format:%H$"


def test_begin_and_finish_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUREPRO_CONTAINER_ENGINE", "docker")
    monkeypatch.setenv("GPUREPRO_IMAGE_ID", "sha256:abc")
    record = provenance.finish(provenance.begin([], "cpu", "hash1"), {"measurement": {"x": 1}})
    assert record["profile"] == "cpu" and record["gpus"] == [] and record["config_hash"] == "hash1"
    assert record["container"] == {"engine": "docker", "image_id": "sha256:abc"}
    assert record["software"]["torch"] and record["host"]["hostname"]
    assert record["start_time"] <= record["end_time"]
    json.dumps(record, default=str)
