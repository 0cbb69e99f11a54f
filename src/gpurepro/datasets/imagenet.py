"""ILSVRC2012 (ImageNet-1k) from the official archives, which only the user can download.

The archives come from image-net.org after logging in, so the pipeline cannot fetch them: the user puts
them where config says, and this module extracts them safely into ImageFolder layout. The train tar
holds one `<wnid>.tar` per class; each is streamed straight into `train/<wnid>/` (no second copy of
138 GB on disk). The val tar holds 50,000 flat images whose classes are in the devkit
(`ILSVRC2012_devkit_t12.tar.gz`, parsed by torchvision) or in a labels text file; each image goes
straight to `val/<wnid>/`. The official archives' MD5s come from torchvision's ImageNet dataset.
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from torchvision.datasets.imagenet import ARCHIVE_META
from tqdm import tqdm

from ..errors import GpureproError
from . import layout
from .download import checksum_matches
from .extract import (
    UnsafeArchiveError,
    check_member_name,
    ensure_free_space,
    extract_tar_stream,
    safe_tar_member,
)
from .imagenet_archives import check_archives
from .specs import IMAGENET, IMAGENET_DEVKIT, IMAGENET_TRAIN_TAR, IMAGENET_VAL_TAR
from .staging import staging_area, write_manifest

TRAIN_MD5 = ARCHIVE_META["train"][1]
VAL_MD5 = ARCHIVE_META["val"][1]
DEVKIT_MD5 = ARCHIVE_META["devkit"][1]
_WNID = re.compile(r"^n\d{8}$")
# Sustained extraction rate assumed for the up-front time estimate (a local SSD does about this).
_EXTRACT_BYTES_PER_S = 200e6


def read_val_labels(path: Path) -> dict[str, str]:
    """Val image file name -> wnid, from the devkit archive or a labels text file."""
    return _labels_from_devkit(path) if tarfile.is_tarfile(path) else _labels_from_text(path)


def _labels_from_devkit(devkit: Path) -> dict[str, str]:
    """torchvision parses meta.mat and the ground-truth list (after checking the devkit's MD5)."""
    try:
        import scipy.io  # noqa: F401  (torchvision needs it to read meta.mat)
    except ImportError:
        raise GpureproError(
            f"reading {devkit} needs scipy (pip install scipy), or give a labels text file instead"
        ) from None
    from torchvision.datasets.imagenet import load_meta_file, parse_devkit_archive

    with tempfile.TemporaryDirectory() as tmp:
        try:
            parse_devkit_archive(tmp, str(devkit.resolve()))
        except RuntimeError as err:
            raise GpureproError(
                f"{devkit} is not the official {IMAGENET_DEVKIT} (md5 {DEVKIT_MD5}): {err}"
            ) from None
        val_wnids = load_meta_file(tmp)[1]
    # The devkit's ground truth lists the classes of ILSVRC2012_val_00000001.JPEG, ...0002, ... in order.
    return {f"ILSVRC2012_val_{i:08d}.JPEG": wnid for i, wnid in enumerate(val_wnids, 1)}


def _labels_from_text(path: Path) -> dict[str, str]:
    """Lines '<image>[,| ]<wnid> ...': e.g. 'ILSVRC2012_val_00000001.JPEG n01751748', or Kaggle's
    LOC_val_solution.csv ('ILSVRC2012_val_00000001,n01751748 x y x y ...', with a header line)."""
    labels: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = re.split(r"[,\s]+", line.strip())
        if len(fields) < 2 or not _WNID.match(fields[1]):
            if number == 1:  # a header line
                continue
            raise GpureproError(f"{path}:{number}: expected '<val image> <wnid>', got '{line.strip()}'")
        name = fields[0] if "." in fields[0] else f"{fields[0]}.JPEG"
        if labels.setdefault(name, fields[1]) != fields[1]:
            raise GpureproError(f"{path}:{number}: {name} is given two classes")
    if not labels:
        raise GpureproError(f"{path} holds no '<val image> <wnid>' lines")
    return labels


@contextmanager
def _reading(archive: Path) -> Iterator[IO[bytes]]:
    """The archive opened for streaming, with a progress bar over its bytes."""
    size = archive.stat().st_size
    with (
        archive.open("rb") as raw,
        tqdm.wrapattr(
            raw, "read", total=size, desc=f"extract {archive.name}", unit="B", unit_scale=True
        ) as fh,
    ):
        yield fh


def _stream(archive: Path, fh: IO[bytes]) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    try:
        with tarfile.open(fileobj=fh, mode="r|") as tar:
            for member in tar:
                yield tar, member
    except tarfile.ReadError as err:
        raise GpureproError(f"{archive}: not a readable tar archive, or truncated ({err})") from None


def extract_train(archive: Path, train_dir: Path) -> None:
    """Each `<wnid>.tar` of the train tar into `train/<wnid>/`; both levels checked for hostile entries."""
    train_dir.mkdir(parents=True)
    with _reading(archive) as fh:
        for tar, member in _stream(archive, fh):
            checked = safe_tar_member(archive, member, train_dir)
            if checked.isdir():
                continue
            relative = check_member_name(archive, checked.name)
            if not checked.isfile() or len(relative.parts) != 1 or relative.suffix != ".tar":
                raise UnsafeArchiveError(
                    f"{archive}: unexpected entry '{member.name}': the official {IMAGENET_TRAIN_TAR} "
                    "holds only one <wnid>.tar per class"
                )
            class_dir = train_dir / relative.stem
            if class_dir.exists():
                raise GpureproError(f"{archive}: class archive '{member.name}' appears twice")
            inner = tar.extractfile(checked)
            assert inner is not None  # a regular file always has contents
            extract_tar_stream(f"{archive}:{member.name}", inner, class_dir)


def extract_val(archive: Path, val_dir: Path, labels: dict[str, str], labels_source: Path) -> None:
    """Each flat val image into `val/<wnid>/`, its class from the labels."""
    val_dir.mkdir(parents=True)
    with _reading(archive) as fh:
        for tar, member in _stream(archive, fh):
            checked = safe_tar_member(archive, member, val_dir)
            if checked.isdir():
                continue
            relative = check_member_name(archive, checked.name)
            if not checked.isfile() or len(relative.parts) != 1:
                raise UnsafeArchiveError(
                    f"{archive}: unexpected entry '{member.name}': the official {IMAGENET_VAL_TAR} "
                    "holds only image files, with no folders or links"
                )
            wnid = labels.get(relative.name)
            if wnid is None:
                raise GpureproError(f"{archive}: val image {relative.name} has no class in {labels_source}")
            target = val_dir / wnid / relative.name
            target.parent.mkdir(exist_ok=True)
            source = tar.extractfile(checked)
            assert source is not None
            with source, target.open("xb") as out:
                shutil.copyfileobj(source, out, 1 << 20)


def prepare(
    train_tar: Path, val_tar: Path, val_labels: Path, dest: Path, expect_full: bool
) -> dict[str, Any]:
    """Check, extract and organise the archives, then publish them at `dest` with a manifest.

    With `expect_full`, the archives must be the official ones (torchvision's pinned MD5s) and hold the
    complete set: 1000 classes, 1,281,167 train and 50,000 val images. Without it, a subset in the same
    layout (e.g. a few classes for a quick run) is accepted when train and val agree.
    """
    check_archives(train_tar, val_tar, val_labels)
    if expect_full:
        for path, official, md5 in (
            (train_tar, IMAGENET_TRAIN_TAR, TRAIN_MD5),
            (val_tar, IMAGENET_VAL_TAR, VAL_MD5),
        ):
            if not checksum_matches(path, f"md5:{md5}"):
                raise GpureproError(
                    f"{path} is not the official {official} (md5 {md5}): download it again, or set "
                    "data.imagenet.full: false (--expect-full off) for a subset"
                )
    labels = read_val_labels(val_labels)
    size = train_tar.stat().st_size + val_tar.stat().st_size
    ensure_free_space(dest.parent, size, "extracting ImageNet")
    minutes = size / _EXTRACT_BYTES_PER_S / 60
    print(
        f"extracting {size / 1e9:.1f} GB of images: roughly {max(minutes, 1):.0f} min at 200 MB/s",
        file=sys.stderr,
    )
    with staging_area(dest) as area:
        root = area.path / "imagenet"
        extract_train(train_tar, root / "train")
        extract_val(val_tar, root / "val", labels, val_labels)
        train = layout.image_counts(root / "train")
        val = layout.image_counts(root / "val")
        source = f"ImageNet from {train_tar.name} and {val_tar.name}"
        layout.check_splits(train, val, source)
        if expect_full:
            layout.check_full(IMAGENET, train, val, source)
        manifest = write_manifest(
            root,
            {
                "dataset": IMAGENET.name,
                "archives": {"train": train_tar.name, "val": val_tar.name, "val_labels": val_labels.name},
                "full": expect_full,
                **layout.summary(train, val),
            },
        )
        area.publish(root)
    return manifest
