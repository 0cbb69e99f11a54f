"""ImageNet from a miniature pair of archives in the official layouts: nested per-class train tars, a flat
val tar with labels from a text file or the devkit (parsed by torchvision); missing archives, hostile
entries at every level, and the full-set checks."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from torchvision.datasets import ImageFolder
from torchvision.datasets import imagenet as tv_imagenet

from gpurepro.cli import main
from gpurepro.datasets import imagenet, specs
from gpurepro.errors import GpureproError

from .conftest import import_installable, run_snakemake
from .dataset_archives import IMAGENET_CLASSES, ImageNetFiles, imagenet_archives, md5


def prepare(files: ImageNetFiles, dest: Path, *extra: str) -> int:
    return main(
        [
            "data",
            "imagenet",
            "--train-tar",
            str(files.train_tar),
            "--val-tar",
            str(files.val_tar),
            "--val-labels",
            str(files.val_labels),
            "--dest",
            str(dest),
            *extra,
        ]
    )


def test_archives_become_imagefolder_layout(tmp_path: Path) -> None:
    files = imagenet_archives(tmp_path / "in")
    dest = tmp_path / "data" / "imagenet"
    assert prepare(files, dest) == 0
    manifest = json.loads((dest / "manifest.json").read_text())
    assert (manifest["classes"], manifest["train_images"], manifest["val_images"]) == (3, 9, 6)
    assert manifest["class_names"] == list(IMAGENET_CLASSES) and manifest["full"] is False
    train, val = ImageFolder(str(dest / "train")), ImageFolder(str(dest / "val"))
    assert train.class_to_idx == val.class_to_idx and len(train) == 9 and len(val) == 6
    for line in files.val_labels.read_text().splitlines():
        name, wnid = line.split()
        assert (dest / "val" / wnid / name).is_file()
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["imagenet"]


def test_missing_archives_say_what_to_get_and_where(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    files = ImageNetFiles(tmp_path / "a.tar", tmp_path / "b.tar", tmp_path / "c.tar.gz")
    assert prepare(files, tmp_path / "imagenet") == 2
    error = capsys.readouterr().err
    for needed in [
        f"train archive {files.train_tar} (the official ILSVRC2012_img_train.tar)",
        "ILSVRC2012_img_val.tar",
        "ILSVRC2012_devkit_t12.tar.gz",
        specs.IMAGENET_DOWNLOAD_PAGE,
        "data.imagenet.train_tar",
    ]:
        assert needed in error
    assert len(error.strip().splitlines()) == 1


def test_the_workflow_stops_at_a_missing_archive_before_any_job(workflow_copy: Path) -> None:
    config = yaml.safe_load((workflow_copy / "config" / "config.yaml").read_text())["data"]
    config.update(source="imagenet")
    (workflow_copy / "test-config.yaml").write_text(yaml.safe_dump({"device": "cpu", "data": config}))
    result = run_snakemake("-n", "loader_bench", "--configfile", "test-config.yaml", cwd=workflow_copy)
    assert result.returncode != 0
    assert "missing: train archive data/ILSVRC2012_img_train.tar" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("where", "kind", "message"),
    [
        ("outer", "dotdot", "refusing entry '../evil.txt'"),
        ("outer", "absolute", "refusing entry '/tmp/gpurepro-evil.txt': it has an absolute path"),
        ("outer", "symlink", "outside the destination"),
        ("inner", "dotdot", "n01443537.tar: refusing entry '../evil.txt'"),
        ("inner", "symlink", "n01443537.tar: refusing entry 'escape'"),
        (
            "inner",
            "hardlink",
            "n01443537.tar: refusing entry 'escape': 'escape' is a link to an absolute path",
        ),
        ("val", "absolute", "refusing entry '/tmp/gpurepro-evil.txt'"),
        ("val", "abs-symlink", "is a link to an absolute path"),
    ],
)
def test_hostile_entries_are_refused_at_every_level(
    tmp_path: Path, where: str, kind: str, message: str, capsys: pytest.CaptureFixture
) -> None:
    files = imagenet_archives(tmp_path / "in", **{f"hostile_{where}": kind})
    data = tmp_path / "data"
    assert prepare(files, data / "imagenet") == 2
    assert message in capsys.readouterr().err
    assert list(data.iterdir()) == []  # no dataset, no partial folder
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "data",
        "in",
        "in/train.tar",
        "in/val.tar",
        "in/val_labels.txt",
    ]
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/gpurepro-evil.txt").exists()


def test_an_existing_dataset_survives_a_failed_rebuild(tmp_path: Path) -> None:
    dest = tmp_path / "data" / "imagenet"
    assert prepare(imagenet_archives(tmp_path / "good"), dest) == 0
    manifest = (dest / "manifest.json").read_bytes()
    assert prepare(imagenet_archives(tmp_path / "bad", hostile_val="dotdot"), dest) == 2
    assert (dest / "manifest.json").read_bytes() == manifest
    assert len(list((dest / "val").rglob("*.JPEG"))) == 6
    assert sorted(p.name for p in dest.parent.iterdir()) == ["imagenet"]


def test_val_image_without_a_label_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    files = imagenet_archives(tmp_path / "in")
    files.val_labels.write_text("".join(files.val_labels.read_text().splitlines(keepends=True)[1:]))
    assert prepare(files, tmp_path / "imagenet") == 2
    assert (
        f"val image ILSVRC2012_val_00000001.JPEG has no class in {files.val_labels}"
        in capsys.readouterr().err
    )


def test_labels_text_formats(tmp_path: Path) -> None:
    kaggle = tmp_path / "LOC_val_solution.csv"
    kaggle.write_text(
        "ImageId,PredictionString\n"
        "ILSVRC2012_val_00000002,n01443537 1 2 3 4 n01443537 5 6 7 8\n"
        "ILSVRC2012_val_00000001,n01440764 1 2 3 4\n"
    )
    assert imagenet.read_val_labels(kaggle) == {
        "ILSVRC2012_val_00000002.JPEG": "n01443537",
        "ILSVRC2012_val_00000001.JPEG": "n01440764",
    }
    clash = tmp_path / "clash.txt"
    clash.write_text("a.JPEG n01440764\na.JPEG n01443537\n")
    with pytest.raises(GpureproError, match=r"clash.txt:2: a.JPEG is given two classes"):
        imagenet.read_val_labels(clash)


def test_expect_full_checks_the_official_md5_then_the_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    files = imagenet_archives(tmp_path / "in")
    assert prepare(files, tmp_path / "imagenet", "--expect-full") == 2
    assert "is not the official ILSVRC2012_img_train.tar (md5 1d675b47" in capsys.readouterr().err
    # Past the MD5 check (as if these were the official files), the counts must be the full set's.
    monkeypatch.setattr(imagenet, "TRAIN_MD5", md5(files.train_tar.read_bytes())[4:])
    monkeypatch.setattr(imagenet, "VAL_MD5", md5(files.val_tar.read_bytes())[4:])
    assert prepare(files, tmp_path / "imagenet", "--expect-full") == 2
    assert (
        "expected the full imagenet: 1000 classes, 1,281,167 train and 50,000 val images, but found 3 "
        "classes, 9 train and 6 val images" in capsys.readouterr().err
    )
    assert not (tmp_path / "imagenet").exists()


def test_official_names_are_torchvisions() -> None:
    assert tv_imagenet.ARCHIVE_META["train"][0] == specs.IMAGENET_TRAIN_TAR
    assert tv_imagenet.ARCHIVE_META["val"][0] == specs.IMAGENET_VAL_TAR
    assert tv_imagenet.ARCHIVE_META["devkit"][0] == specs.IMAGENET_DEVKIT


def devkit(path: Path, val_wnids: list[str]) -> bytes:
    """ILSVRC2012_devkit_t12.tar.gz in miniature: data/meta.mat and the val ground truth, as torchvision
    reads them (ILSVRC2012_ID, WNID, words, gloss, num_children per synset; leaves have no children)."""
    scipy_io = import_installable("scipy.io")
    fields = [("ILSVRC2012_ID", "O"), ("WNID", "O"), ("words", "O"), ("gloss", "O"), ("num_children", "O")]
    synsets = [(i + 1, wnid, f"thing {i}", "a thing", 0) for i, wnid in enumerate(IMAGENET_CLASSES)]
    synsets.append((len(synsets) + 1, "n00001740", "entity", "the root", len(synsets)))
    meta = io.BytesIO()
    scipy_io.savemat(meta, {"synsets": np.array(synsets, dtype=fields)})
    ids = {wnid: i + 1 for i, wnid in enumerate(IMAGENET_CLASSES)}
    truth = "".join(f"{ids[wnid]}\n" for wnid in val_wnids).encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("meta.mat", meta.getvalue()), ("ILSVRC2012_validation_ground_truth.txt", truth)):
            info = tarfile.TarInfo(f"ILSVRC2012_devkit_t12/data/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path.read_bytes()


def test_val_classes_from_the_devkit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = imagenet_archives(tmp_path / "in")
    val_wnids = [line.split()[1] for line in files.val_labels.read_text().splitlines()]
    kit = tmp_path / "in" / specs.IMAGENET_DEVKIT
    data = devkit(kit, val_wnids)
    with pytest.raises(GpureproError, match="is not the official ILSVRC2012_devkit_t12.tar.gz"):
        imagenet.read_val_labels(kit)
    # torchvision checks the devkit against the official MD5; accept this miniature one instead.
    monkeypatch.setitem(tv_imagenet.ARCHIVE_META, "devkit", (specs.IMAGENET_DEVKIT, md5(data)[4:]))
    expected = {f"ILSVRC2012_val_{i:08d}.JPEG": wnid for i, wnid in enumerate(val_wnids, 1)}
    assert imagenet.read_val_labels(kit) == expected
    dest = tmp_path / "imagenet"
    assert prepare(ImageNetFiles(files.train_tar, files.val_tar, kit), dest) == 0
    assert json.loads((dest / "manifest.json").read_text())["val_images"] == 6
