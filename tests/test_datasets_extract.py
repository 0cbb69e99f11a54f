"""Safe extraction and staging: hostile entries (absolute paths, `..`, links out of the target) are refused
with a clear error and write nothing outside; a failed build leaves the destination as it was."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from gpurepro.datasets import download, extract, staging
from gpurepro.datasets.workers import resolve_workers
from gpurepro.errors import GpureproError

from .dataset_archives import hostile_zip, tar_bytes, tiny_imagenet_zip


def untar(archive: Path, target: Path) -> int:
    with archive.open("rb") as fh:
        return extract.extract_tar_stream(archive, fh, target)


def everything(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("absolute", "refusing entry '/tmp/gpurepro-evil.txt': it has an absolute path"),
        ("dotdot", "refusing entry 'tiny-imagenet-200/../../evil.txt': it climbs out of the target"),
        ("symlink", "refusing entry 'tiny-imagenet-200/escape': it is a symbolic link"),
    ],
)
def test_hostile_zip_is_refused_before_anything_is_written(tmp_path: Path, kind: str, message: str) -> None:
    archive = tmp_path / "archive"
    archive.write_bytes(hostile_zip(kind))
    target = tmp_path / "deep" / "target"
    with pytest.raises(extract.UnsafeArchiveError, match=message.replace("(", r"\(").replace(".", r"\.")):
        extract.extract_zip(archive, target, progress=False)
    # Every entry is checked before the first is written: the target stays empty, nothing lands beside it.
    assert everything(tmp_path) == ["archive", "deep", "deep/target"]
    assert not Path("/tmp/gpurepro-evil.txt").exists()


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("absolute", "refusing entry '/tmp/gpurepro-evil.txt': it has an absolute path"),
        ("dotdot", "refusing entry '../evil.txt': it climbs out of the target with '..'"),
        ("symlink", "outside the destination"),
        ("abs-symlink", "is a link to an absolute path"),
        ("hardlink", "is a link to an absolute path"),
    ],
)
def test_hostile_tar_is_refused(tmp_path: Path, kind: str, message: str) -> None:
    archive = tmp_path / "archive"
    archive.write_bytes(tar_bytes({"ok.txt": b"fine"}, hostile=kind))
    target = tmp_path / "deep" / "target"
    with pytest.raises(extract.UnsafeArchiveError, match=message) as err:
        untar(archive, target)
    assert str(archive) in str(err.value) and "refusing entry" in str(err.value)
    assert everything(tmp_path) == ["archive", "deep", "deep/target", "deep/target/ok.txt"]
    assert not Path("/tmp/gpurepro-evil.txt").exists()


def test_hardlink_climbing_out_is_refused(tmp_path: Path) -> None:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        link = tarfile.TarInfo("sub/escape")
        link.type = tarfile.LNKTYPE
        link.linkname = "../../secret"
        tar.addfile(link)
    (tmp_path / "secret").write_text("do not link me")
    archive = tmp_path / "archive"
    archive.write_bytes(out.getvalue())
    with pytest.raises(extract.UnsafeArchiveError, match="outside the destination"):
        untar(archive, tmp_path / "a" / "target")


def test_benign_archives_extract(tmp_path: Path) -> None:
    zip_file = tmp_path / "t.zip"
    zip_file.write_bytes(tiny_imagenet_zip(train_per_class=1, val_per_class=1))
    assert extract.extract_zip(zip_file, tmp_path / "z", progress=False) == 13
    assert (tmp_path / "z" / "tiny-imagenet-200" / "wnids.txt").is_file()
    tar_file = tmp_path / "t.tar"
    tar_file.write_bytes(tar_bytes({"a/b.txt": b"x", "c.txt": b"y"}))
    assert untar(tar_file, tmp_path / "t") == 2
    assert (tmp_path / "t" / "a" / "b.txt").read_bytes() == b"x"


def test_truncated_archives_give_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.zip"
    broken.write_bytes(tiny_imagenet_zip()[:1000])
    with pytest.raises(GpureproError, match="not a readable zip archive, or truncated"):
        extract.extract_zip(broken, tmp_path / "z", progress=False)
    broken_tar = tmp_path / "broken.tar"
    broken_tar.write_bytes(tar_bytes({"a.txt": b"x" * 5000})[:700])
    with pytest.raises(GpureproError, match="not a readable tar archive, or truncated"):
        untar(broken_tar, tmp_path / "t")


def _good_dataset(dest: Path, marker: str) -> None:
    with staging.staging_area(dest) as area:
        (area.path / "x").mkdir()
        (area.path / "x" / "image.JPEG").write_text(marker)
        staging.write_manifest(area.path / "x", {"dataset": "test", "marker": marker})
        area.publish(area.path / "x")


def test_failed_build_keeps_the_earlier_dataset_and_leaves_no_partial_folder(tmp_path: Path) -> None:
    dest = tmp_path / "data" / "set"
    _good_dataset(dest, "first")
    before = sorted(p.relative_to(dest) for p in dest.rglob("*"))
    with pytest.raises(RuntimeError, match="half-way"), staging.staging_area(dest) as area:
        (area.path / "x").mkdir()
        (area.path / "x" / "image.JPEG").write_text("second")
        raise RuntimeError("failed half-way")
    assert sorted(p.relative_to(dest) for p in dest.rglob("*")) == before
    assert json.loads((dest / "manifest.json").read_text())["marker"] == "first"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["set"]

    _good_dataset(dest, "second")
    assert (dest / "image.JPEG").read_text() == "second"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["set"]


def test_publishing_needs_a_manifest_and_leftovers_of_a_killed_run_go(tmp_path: Path) -> None:
    dest = tmp_path / "set"
    (tmp_path / ".set.partial-abc123").mkdir()  # as a killed run leaves it
    with pytest.raises(GpureproError, match="no manifest.json"), staging.staging_area(dest) as area:
        area.publish(area.path)
    assert not dest.exists() and list(tmp_path.iterdir()) == []


def test_reading_an_incomplete_dataset_says_how_to_make_it(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    with pytest.raises(GpureproError, match=r"half is incomplete \(no manifest.json\); make it with: X"):
        staging.read_manifest(tmp_path / "half", "X")


@pytest.mark.parametrize(
    "bad", ["md5:abc", "sha1:" + "0" * 40, "90528d7ca1a48142e341f4ef8d21d0de", "sha256:xyz"]
)
def test_bad_checksums_are_named(bad: str) -> None:
    with pytest.raises(GpureproError, match="is not 'md5:<32 hex digits>' or 'sha256:<64 hex digits>'"):
        download.parse_checksum(bad)


def test_checksums_are_normalised_and_checked(tmp_path: Path) -> None:
    assert download.parse_checksum(" md5:ABCDEF0123456789ABCDEF0123456789 ") == (
        "md5:abcdef0123456789abcdef0123456789"
    )
    path = tmp_path / "f"
    path.write_bytes(b"hello")
    assert download.checksum_matches(path, "md5:5d41402abc4b2a76b9719d911017c592")
    assert download.checksum_matches(
        path, "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    )
    assert not download.checksum_matches(path, "md5:" + "0" * 32)


def test_loader_workers() -> None:
    assert 1 <= resolve_workers("auto") <= 16
    assert resolve_workers(0) == 0 and resolve_workers(3) == 3
    with pytest.raises(GpureproError, match="'auto' or a number"):
        resolve_workers(-1)
