"""Tiny-ImageNet-200: the public zip, extracted safely and put in ImageFolder layout.

The zip holds `tiny-imagenet-200/` with `wnids.txt` (the 200 classes), `train/<wnid>/images/*.JPEG`
(which ImageFolder reads as it is), `val/images/*.JPEG` with the class of each image only in
`val/val_annotations.txt`, and an unlabelled `test/`. The val images are moved into `val/<wnid>/` so
ImageFolder reads both splits alike, with the same class numbering.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import GpureproError
from . import layout
from .download import checksum_matches, parse_checksum
from .extract import check_member_name, ensure_free_space, extract_zip, zip_uncompressed_bytes
from .specs import TINY_IMAGENET, TINY_IMAGENET_CHECKSUM
from .staging import staging_area, write_manifest

TOP_FOLDER = "tiny-imagenet-200"


def read_classes(root: Path) -> list[str]:
    """The classes `wnids.txt` lists: the train folders and val annotations must use exactly these."""
    wnids = root / "wnids.txt"
    if not wnids.is_file():
        raise GpureproError(f"{wnids} is missing: not the Tiny-ImageNet layout")
    classes = [line.strip() for line in wnids.read_text().splitlines() if line.strip()]
    if len(set(classes)) != len(classes):
        raise GpureproError(f"{wnids} lists a class twice")
    return classes


def organise_val(root: Path, classes: list[str]) -> None:
    """Move each `val/images/<file>` to `val/<wnid>/<file>`, as `val/val_annotations.txt` says."""
    val = root / "val"
    annotations = val / "val_annotations.txt"
    images = val / "images"
    if not annotations.is_file() or not images.is_dir():
        raise GpureproError(f"{val} lacks val_annotations.txt or images/: not the Tiny-ImageNet layout")
    known = set(classes)
    for number, line in enumerate(annotations.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{annotations}:{number}"
        if len(fields) < 2:
            raise GpureproError(f"{where}: expected '<image>\\t<wnid>\\t...', got '{line}'")
        name, wnid = fields[0], fields[1]
        if check_member_name(where, name).name != name:
            raise GpureproError(f"{where}: image '{name}' is not a plain file name")
        if wnid not in known:
            raise GpureproError(f"{where}: class '{wnid}' is not in wnids.txt")
        source = images / name
        if not source.is_file():
            raise GpureproError(f"{where}: image {source} is missing from the archive")
        (val / wnid).mkdir(exist_ok=True)
        source.rename(val / wnid / name)
    unlabelled = sorted(p.name for p in images.iterdir())
    if unlabelled:
        raise GpureproError(
            f"{images}: {len(unlabelled)} image(s) have no line in val_annotations.txt, e.g. {unlabelled[0]}"
        )
    images.rmdir()


def prepare(archive: Path, dest: Path, checksum: str) -> dict[str, Any]:
    """Extract, organise and check the zip, then publish it at `dest` with its manifest.

    The official archive (the pinned checksum) must hold the full 200 classes, 100,000 train and 10,000
    val images; any other archive (a re-pack on a mirror, a test fixture) is checked for consistency.
    """
    checksum = parse_checksum(checksum)
    if not archive.is_file():
        raise GpureproError(f"{archive} does not exist")
    if not checksum_matches(archive, checksum):
        raise GpureproError(f"{archive} does not match checksum {checksum}; download it again")
    ensure_free_space(dest.parent, zip_uncompressed_bytes(archive), f"extracting {archive.name}")
    with staging_area(dest) as area:
        print(f"extracting {archive} (about a minute for the full set)", file=sys.stderr)
        extract_zip(archive, area.path)
        root = area.path / TOP_FOLDER
        if not root.is_dir():
            raise GpureproError(f"{archive}: no top folder '{TOP_FOLDER}/': not the Tiny-ImageNet layout")
        classes = read_classes(root)
        organise_val(root, classes)
        source = f"{archive.name} ({checksum})"
        train = layout.image_counts(root / "train")
        val = layout.image_counts(root / "val")
        if set(train) != set(classes):
            raise GpureproError(f"{source}: the train class folders are not the classes of wnids.txt")
        layout.check_splits(train, val, source)
        if checksum == TINY_IMAGENET_CHECKSUM:
            layout.check_full(TINY_IMAGENET, train, val, source)
        manifest = write_manifest(
            root,
            {
                "dataset": TINY_IMAGENET.name,
                "archive": archive.name,
                "archive_checksum": checksum,
                **layout.summary(train, val),
            },
        )
        area.publish(root)
    return manifest
