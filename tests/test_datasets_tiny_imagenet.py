"""Tiny-ImageNet through the real download code (pooch) from a local HTTP server on 127.0.0.1: a good
archive, a wrong checksum, a connection dropped half-way, a failing address with a mirror, and hostile
archives; then the download, extraction and loader-bench rules through Snakemake itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from torchvision.datasets import ImageFolder

from gpurepro.cli import main

from .conftest import run_snakemake
from .dataset_archives import TINY_CLASSES, hostile_zip, md5, serve, tiny_imagenet_zip

WRONG = "md5:" + "0" * 32


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local server must be reached directly, whatever proxy the environment names."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def tiny_zip() -> bytes:
    return tiny_imagenet_zip(train_per_class=4, val_per_class=2)


def fetch(url: str, checksum: str, dest: Path, *extra: str) -> int:
    return main(["data", "tiny-imagenet", "--url", url, "--checksum", checksum, "--dest", str(dest), *extra])


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_download_extracts_into_imagefolder_layout(tmp_path: Path, tiny_zip: bytes) -> None:
    dest = tmp_path / "data" / "tiny-imagenet-200"
    with serve({"tiny.zip": tiny_zip}) as server:
        assert fetch(server.url("tiny.zip"), md5(tiny_zip), dest) == 0
    manifest = json.loads((dest / "manifest.json").read_text())
    assert (manifest["classes"], manifest["train_images"], manifest["val_images"]) == (3, 12, 6)
    assert manifest["archive_checksum"] == md5(tiny_zip)
    assert not (dest / "val" / "images").exists()
    assert sorted(p.name for p in (dest / "val").iterdir() if p.is_dir()) == list(TINY_CLASSES)
    train, val = ImageFolder(str(dest / "train")), ImageFolder(str(dest / "val"))
    assert train.class_to_idx == val.class_to_idx and len(train) == 12 and len(val) == 6
    # Each val image sits in the class val_annotations.txt gives it.
    for line in (dest / "val" / "val_annotations.txt").read_text().splitlines():
        name, wnid = line.split("\t")[:2]
        assert (dest / "val" / wnid / name).is_file()
    assert (tmp_path / "data" / "tiny-imagenet-200.zip").read_bytes() == tiny_zip
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [
        "tiny-imagenet-200",
        "tiny-imagenet-200.zip",
    ]

    # Run again: the zip on disk has the checksum, so nothing is downloaded.
    with serve({}) as server:
        assert fetch(server.url("tiny.zip"), md5(tiny_zip), dest) == 0
        assert server.requests == {}


def test_wrong_checksum_writes_nothing(
    tmp_path: Path, tiny_zip: bytes, capsys: pytest.CaptureFixture
) -> None:
    data = tmp_path / "data"
    with serve({"tiny.zip": tiny_zip}) as server:
        assert fetch(server.url("tiny.zip"), WRONG, data / "tiny-imagenet-200", "--attempts", "1") == 2
    error = capsys.readouterr().err
    assert "could not download tiny-imagenet-200.zip" in error and "does not match the known hash" in error
    assert "nothing was written" in error
    assert list(data.iterdir()) == []  # no archive, no temporary file, no dataset, no manifest


def test_wrong_checksum_keeps_an_existing_good_dataset(tmp_path: Path, tiny_zip: bytes) -> None:
    dest = tmp_path / "data" / "tiny-imagenet-200"
    with serve({"tiny.zip": tiny_zip}) as server:
        assert fetch(server.url("tiny.zip"), md5(tiny_zip), dest) == 0
        before, archive = listing(tmp_path), (tmp_path / "data" / "tiny-imagenet-200.zip").stat()
        assert fetch(server.url("tiny.zip"), WRONG, dest, "--attempts", "1") == 2
        assert server.requests["tiny.zip"] == 2
    assert listing(tmp_path) == before
    assert (tmp_path / "data" / "tiny-imagenet-200.zip").stat().st_mtime_ns == archive.st_mtime_ns


def test_connection_dropped_half_way_restarts_cleanly(tmp_path: Path, tiny_zip: bytes) -> None:
    dest = tmp_path / "data" / "tiny-imagenet-200"
    with serve({"tiny.zip": tiny_zip}, {"tiny.zip": "drop-once"}) as server:
        assert fetch(server.url("tiny.zip"), md5(tiny_zip), dest, "--attempts", "2") == 0
        assert server.requests["tiny.zip"] == 2
    assert (tmp_path / "data" / "tiny-imagenet-200.zip").read_bytes() == tiny_zip
    assert json.loads((dest / "manifest.json").read_text())["train_images"] == 12


def test_connection_always_dropped_leaves_no_partial_file(
    tmp_path: Path, tiny_zip: bytes, capsys: pytest.CaptureFixture
) -> None:
    data = tmp_path / "data"
    with serve({"tiny.zip": tiny_zip}, {"tiny.zip": "drop"}) as server:
        assert (
            fetch(server.url("tiny.zip"), md5(tiny_zip), data / "tiny-imagenet-200", "--attempts", "1") == 2
        )
        url = server.url("tiny.zip")
    error = capsys.readouterr().err
    assert f"{url}: ChunkedEncodingError" in error and "nothing was written" in error
    assert list(data.iterdir()) == []


def test_mirror_is_used_when_the_address_fails(tmp_path: Path, tiny_zip: bytes) -> None:
    dest = tmp_path / "data" / "tiny-imagenet-200"
    with serve({"mirror.zip": tiny_zip}) as server:
        code = fetch(
            server.url("gone.zip"),
            md5(tiny_zip),
            dest,
            "--mirror",
            server.url("mirror.zip"),
            "--attempts",
            "1",
        )
        assert code == 0 and server.requests == {"gone.zip": 1, "mirror.zip": 1}
    assert (dest / "manifest.json").is_file()


@pytest.mark.parametrize(
    ("kind", "entry"),
    [
        ("absolute", "/tmp/gpurepro-evil.txt"),
        ("dotdot", "tiny-imagenet-200/../../evil.txt"),
        ("symlink", "escape"),
    ],
)
def test_hostile_archive_with_a_good_checksum_is_refused(
    tmp_path: Path, kind: str, entry: str, capsys: pytest.CaptureFixture
) -> None:
    archive = hostile_zip(kind)
    data = tmp_path / "data"
    with serve({"tiny.zip": archive}) as server:
        assert fetch(server.url("tiny.zip"), md5(archive), data / "tiny-imagenet-200") == 2
    error = capsys.readouterr().err
    assert "refusing entry" in error and entry in error
    # The verified download stays (it is what was asked for); no dataset, no manifest, nothing outside.
    assert sorted(p.name for p in data.iterdir()) == ["tiny-imagenet-200.zip"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert not Path("/tmp/gpurepro-evil.txt").exists()


def test_annotation_for_a_missing_val_image_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import io
    import zipfile

    buffer = io.BytesIO(tiny_imagenet_zip(train_per_class=1, val_per_class=1))
    with zipfile.ZipFile(buffer) as zf:
        entries = {info.filename: zf.read(info) for info in zf.infolist()}
    del entries["tiny-imagenet-200/val/images/val_0.JPEG"]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    archive = tmp_path / "t.zip"
    archive.write_bytes(out.getvalue())
    dest = tmp_path / "set"
    code = main(
        [
            "data",
            "tiny-imagenet",
            "--archive",
            str(archive),
            "--checksum",
            md5(out.getvalue()),
            "--dest",
            str(dest),
        ]
    )
    assert code == 2 and "val_0.JPEG is missing from the archive" in capsys.readouterr().err
    assert not dest.exists()


@pytest.mark.pipeline
def test_rules_download_extract_and_bench_through_snakemake(workflow_copy: Path, tiny_zip: bytes) -> None:
    with serve({"tiny.zip": tiny_zip}, {"tiny.zip": "drop-once"}) as server:
        config = yaml.safe_load((workflow_copy / "config" / "config.yaml").read_text())["data"]
        config.update(source="tiny-imagenet", loader={"workers": 1, "bench_seconds": 1})
        config["tiny_imagenet"].update(url=server.url("tiny.zip"), checksum=md5(tiny_zip))
        (workflow_copy / "test-config.yaml").write_text(yaml.safe_dump({"device": "cpu", "data": config}))
        args = ["loader_bench", "--cores", "2", "--configfile", "test-config.yaml"]
        result = run_snakemake(*args, cwd=workflow_copy)
        assert result.returncode == 0, result.stderr[-4000:]
        # The first try was cut off half-way: Snakemake's retries started the rule again.
        assert server.requests["tiny.zip"] == 2

    data = workflow_copy / "data"
    assert (data / "downloads" / "tiny-imagenet-200.zip").read_bytes() == tiny_zip
    assert json.loads((data / "tiny-imagenet-200" / "manifest.json").read_text())["val_images"] == 6
    assert sorted(p.name for p in (data / "logs").iterdir()) == [
        "download_tiny_imagenet.log",
        "tiny_imagenet.log",
    ]
    raw = workflow_copy / "results" / "cpu" / "data" / "raw"
    table = (raw / "loader_tiny-imagenet.csv").read_text().splitlines()
    assert table[0] == "batch,images,wait_s,elapsed_s,source,split,batch_size,workers"
    assert table[1].endswith(",tiny-imagenet,train,8,1") and len(table) > 3  # the cpu profile's batch size
    sidecar = json.loads((raw / "loader_tiny-imagenet.provenance.json").read_text())
    assert sidecar["profile"] == "cpu" and sidecar["rate"]["images_per_s"] > 0
    log = (workflow_copy / "results" / "cpu" / "logs" / "data" / "loader_tiny-imagenet.log").read_text()
    assert "images/s (batch 8, 1 workers" in log

    again = run_snakemake("-n", *args, cwd=workflow_copy)
    assert "Nothing to be done" in again.stdout + again.stderr
