"""Checks of the common layout (`train/<class>/...`, `val/<class>/...`) before a dataset is published.

Counting uses torchvision's own list of image extensions, so the numbers in the manifest are the
numbers ImageFolder will load. Train and val must hold the same classes: ImageFolder numbers classes by
sorted folder name, and a class missing from one split would shift every label after it.
"""

from __future__ import annotations

import os
from pathlib import Path

from torchvision.datasets.folder import IMG_EXTENSIONS

from ..errors import GpureproError
from .specs import DatasetSpec


def image_counts(split_dir: Path) -> dict[str, int]:
    """Images per class folder of one split, looking into sub-folders as ImageFolder does."""
    counts = {}
    for class_dir in sorted(p for p in split_dir.iterdir() if p.is_dir()):
        counts[class_dir.name] = sum(
            name.lower().endswith(IMG_EXTENSIONS)
            for _, _, names in os.walk(class_dir, followlinks=False)
            for name in names
        )
    return counts


def _few(names: set[str]) -> str:
    shown = sorted(names)[:5]
    return ", ".join(shown) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def check_splits(train: dict[str, int], val: dict[str, int], source: str) -> None:
    """Same classes in both splits, and no class without images."""
    if not train:
        raise GpureproError(f"{source}: the train split has no class folders")
    if set(train) != set(val):
        only_train, only_val = set(train) - set(val), set(val) - set(train)
        detail = "; ".join(
            part
            for part in (
                only_train and f"only in train: {_few(only_train)}",
                only_val and f"only in val: {_few(only_val)}",
            )
            if part
        )
        raise GpureproError(f"{source}: train and val hold different classes ({detail})")
    for split, counts in (("train", train), ("val", val)):
        empty = {name for name, n in counts.items() if n == 0}
        if empty:
            raise GpureproError(f"{source}: {split} classes without images: {_few(empty)}")


def check_full(spec: DatasetSpec, train: dict[str, int], val: dict[str, int], source: str) -> None:
    """The counts of the complete official set; a truncated or partial archive fails here."""
    found = (len(train), sum(train.values()), sum(val.values()))
    wanted = (spec.classes, spec.train_images, spec.val_images)
    if found != wanted:
        raise GpureproError(
            f"{source}: expected the full {spec.name}: {wanted[0]} classes, {wanted[1]:,} train and "
            f"{wanted[2]:,} val images, but found {found[0]} classes, {found[1]:,} train and "
            f"{found[2]:,} val images; the archives are incomplete or not the official ones"
        )


def summary(train: dict[str, int], val: dict[str, int]) -> dict[str, object]:
    """The counts a manifest records."""
    return {
        "classes": len(train),
        "train_images": sum(train.values()),
        "val_images": sum(val.values()),
        "class_names": sorted(train),
    }
