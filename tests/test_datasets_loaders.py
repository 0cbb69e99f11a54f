"""Synthetic data (deterministic, shaped like the real sets), the loaders of all three sources, the loader
bench, and the `data` config block's validation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import yaml

from gpurepro.cli import main
from gpurepro.datasets import loader_bench, loaders, specs, tiny_imagenet
from gpurepro.datasets.synthetic import SyntheticImages
from gpurepro.errors import GpureproError
from gpurepro.schema import first_error

from .conftest import ROOT, run_snakemake
from .dataset_archives import imagenet_archives, md5, tiny_imagenet_zip


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    archive = folder / "tiny-imagenet-200.zip"
    archive.write_bytes(tiny_imagenet_zip(train_per_class=6, val_per_class=2))
    tiny_imagenet.prepare(archive, folder / "tiny-imagenet-200", md5(archive.read_bytes()))
    return folder / "tiny-imagenet-200"


@pytest.mark.parametrize(("like", "shape"), [("tiny-imagenet", (3, 64, 64)), ("imagenet", (3, 224, 224))])
def test_synthetic_data_copies_the_real_sets_shapes_and_counts(like: str, shape: tuple[int, ...]) -> None:
    spec = specs.SPECS[like]
    train = loaders.make_dataset("synthetic", "train", seed=0, like=like)
    val = loaders.make_dataset("synthetic", "val", seed=0, like=like)
    assert (len(train), len(val)) == (spec.train_images, spec.val_images)
    image, label = train[spec.classes + 3]
    assert image.shape == shape and image.dtype == torch.float32 and label == 3
    assert train[spec.classes - 1][1] == spec.classes - 1 and val[len(val) - 1][1] < spec.classes


def test_synthetic_data_is_deterministic_from_the_seed() -> None:
    one = SyntheticImages(specs.TINY_IMAGENET, "train", seed=7)
    again = SyntheticImages(specs.TINY_IMAGENET, "train", seed=7)
    other = SyntheticImages(specs.TINY_IMAGENET, "train", seed=8)
    val = SyntheticImages(specs.TINY_IMAGENET, "val", seed=7)
    assert torch.equal(one[12][0], again[12][0])
    assert not torch.equal(one[12][0], other[12][0]) and not torch.equal(one[12][0], val[12][0])
    assert one[12][0].dtype == torch.uint8
    with pytest.raises(IndexError):
        one[len(one)]


def test_synthetic_loader_batches_are_seeded() -> None:
    def first_batch(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        dataset = loaders.make_dataset("synthetic", "train", seed=seed)
        return next(iter(loaders.make_loader(dataset, batch_size=4, workers=0, seed=seed, train=True)))

    images, labels = first_batch(1)
    assert images.shape == (4, 3, 64, 64) and labels.dtype == torch.int64
    assert torch.equal(labels, first_batch(1)[1]) and not torch.equal(labels, first_batch(2)[1])


def test_real_sets_load_as_model_input(tiny_root: Path, tmp_path: Path) -> None:
    dataset = loaders.make_dataset("tiny-imagenet", "val", seed=0, root=tiny_root)
    images, labels = next(iter(loaders.make_loader(dataset, batch_size=4, workers=1, seed=0, train=False)))
    assert (
        images.shape == (4, 3, 64, 64) and images.dtype == torch.float32 and labels.tolist() == [0, 0, 1, 1]
    )

    files = imagenet_archives(tmp_path / "in")
    paths = ["--train-tar", files.train_tar, "--val-tar", files.val_tar, "--val-labels", files.val_labels]
    assert main(["data", "imagenet", *map(str, paths), "--dest", str(tmp_path / "imagenet")]) == 0
    for split in ("train", "val"):
        dataset = loaders.make_dataset("imagenet", split, seed=0, root=tmp_path / "imagenet")
        images, _ = next(iter(loaders.make_loader(dataset, batch_size=3, workers=0, seed=0, train=False)))
        assert images.shape == (3, 3, 224, 224)


def test_incomplete_or_changed_datasets_are_refused(tiny_root: Path, tmp_path: Path) -> None:
    half = tmp_path / "half"
    (half / "train" / "n01443537").mkdir(parents=True)
    with pytest.raises(GpureproError, match="is incomplete \\(no manifest.json\\); make it with: snakemake"):
        loaders.make_dataset("tiny-imagenet", "train", seed=0, root=half)
    with pytest.raises(GpureproError, match="holds 'tiny-imagenet', not imagenet"):
        loaders.make_dataset("imagenet", "train", seed=0, root=tiny_root)
    changed = tmp_path / "changed"
    changed.mkdir()
    (changed / "manifest.json").write_text(json.dumps({"dataset": "tiny-imagenet", "train_images": 99}))
    (changed / "train" / "n01443537").mkdir(parents=True)
    (changed / "train" / "n01443537" / "x.JPEG").write_bytes(b"")
    with pytest.raises(GpureproError, match="has 1 images but its manifest says 99"):
        loaders.make_dataset("tiny-imagenet", "train", seed=0, root=changed)


def test_loader_bench_reports_images_per_second(tiny_root: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "raw" / "loader.csv"
    args = [
        "data",
        "loader-bench",
        "--source",
        "tiny-imagenet",
        "--root",
        str(tiny_root),
        "--batch-size",
        "4",
    ]
    assert main([*args, "--workers", "1", "--seconds", "0.5", "--profile", "cpu", "--out", str(out)]) == 0
    assert "images/s (batch 4, 1 workers" in capsys.readouterr().err
    rows = out.read_text().splitlines()
    assert rows[0] == "batch,images,wait_s,elapsed_s,source,split,batch_size,workers" and len(rows) > 3
    sidecar = json.loads(out.with_name("loader.provenance.json").read_text())
    assert sidecar["rate"]["images_per_s"] > 0 and sidecar["loader"]["workers"] == 1
    assert main([*args, "--seconds", "0.5", "--out", str(out)]) == 2  # raw results are never overwritten
    assert "already exists" in capsys.readouterr().err


def test_rate_leaves_out_the_first_batch() -> None:
    import pandas as pd

    batches = pd.DataFrame({"images": [8, 8, 8, 4], "elapsed_s": [5.0, 6.0, 7.0, 7.5]})
    measured = loader_bench.rate(batches)
    assert measured.images_per_s == pytest.approx(20 / 2.5) and measured.first_batch_s == 5.0


def test_a_loader_needs_one_full_batch() -> None:
    dataset = loaders.make_dataset("synthetic", "val", seed=0)
    with pytest.raises(GpureproError, match="fewer than one batch"):
        loaders.make_loader(dataset, batch_size=len(dataset) + 1, workers=0, seed=0, train=True)


CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def test_default_data_config_is_valid_and_offline() -> None:
    assert first_error(CONFIG, SCHEMA) is None
    assert CONFIG["data"]["source"] == "synthetic"
    assert CONFIG["data"]["tiny_imagenet"]["checksum"] == specs.TINY_IMAGENET_CHECKSUM


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("source",),
            "imagenett",
            "key data.source: 'imagenett' is not one of ['synthetic', 'tiny-imagenet'",
        ),
        (
            ("tiny_imagenet", "checksum"),
            "md5:abc",
            "key data.tiny_imagenet.checksum: 'md5:abc' does not match",
        ),
        (
            ("tiny_imagenet", "mirrors"),
            ["ftp:/x"],
            "key data.tiny_imagenet.mirrors.0: 'ftp:/x' does not match",
        ),
        (("loader", "workers"), -1, "key data.loader.workers: -1 is less than the minimum of 0"),
        (("imagenet", "full"), "yes", "key data.imagenet.full: 'yes' is not of type 'boolean'"),
        (("synthetic", "like"), "cifar", "key data.synthetic.like: 'cifar' is not one of"),
        (("data_dirr",), "x", "('data_dirr' was unexpected); allowed keys: data_dir, imagenet, loader"),
    ],
)
def test_bad_data_config_names_the_key(path: tuple[str, ...], value: object, message: str) -> None:
    config = copy.deepcopy(CONFIG)
    target = config["data"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert message in (first_error(config, SCHEMA) or "")


def test_bad_data_config_stops_the_workflow_at_start(workflow_copy: Path) -> None:
    result = run_snakemake(
        "-n", "--cores", "1", "--config", "data={loader: {workers: many}}", cwd=workflow_copy
    )
    assert result.returncode != 0
    assert "bad config: key data.loader.workers: 'many'" in result.stdout + result.stderr
