"""DataLoaders that feed the training study and the noise workload, from any of the three sources.

Every source yields the same thing: float32 batches `[B, 3, H, W]`, normalised with ImageNet's mean and
standard deviation, and int64 labels. The real sets are read only from a folder with a manifest (written
last when the dataset was made), so a half-extracted folder is never used.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset
from torchvision.datasets import ImageFolder
from torchvision.transforms import v2

from ..errors import GpureproError
from .specs import SOURCES, SPECS, SPLITS
from .staging import read_manifest
from .synthetic import SyntheticImages

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# Batches each worker prepares ahead: JPEG decoding is bursty, and a deeper queue smooths it over.
PREFETCH_FACTOR = 4
HOW_TO_MAKE = {
    "tiny-imagenet": "snakemake tiny_imagenet (or gpurepro data tiny-imagenet)",
    "imagenet": "snakemake imagenet (or gpurepro data imagenet), with the ILSVRC2012 archives in data_dir",
}


def _to_model_input() -> list[v2.Transform]:
    return [v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]


def image_transform(dataset: str, split: str) -> v2.Compose:
    """The usual recipe per set: Tiny-ImageNet at its 64x64 with flips; ImageNet cropped to 224x224."""
    train = split == "train"
    if dataset == "tiny-imagenet":
        augment: list[v2.Transform] = [v2.RandomHorizontalFlip()] if train else []
    elif train:
        augment = [v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip()]
    else:
        augment = [v2.Resize(256, antialias=True), v2.CenterCrop(224)]
    return v2.Compose(augment + _to_model_input())


def make_dataset(
    source: str, split: str, seed: int, root: Path | None = None, like: str = "tiny-imagenet"
) -> Dataset[tuple[torch.Tensor, int]]:
    """One split: synthetic data shaped `like` a real set, or the finished real dataset at `root`."""
    if split not in SPLITS:
        raise GpureproError(f"split must be one of {', '.join(SPLITS)}, got '{split}'")
    if source == "synthetic":
        if like not in SPECS:
            raise GpureproError(f"synthetic data can stand in for {', '.join(SPECS)}, not '{like}'")
        return SyntheticImages(SPECS[like], split, seed, transform=v2.Compose(_to_model_input()))
    if source not in SPECS:
        raise GpureproError(f"source must be one of {', '.join(SOURCES)}, got '{source}'")
    if root is None:
        raise GpureproError(f"source {source} needs the dataset folder (--root)")
    manifest = read_manifest(root, HOW_TO_MAKE[source])
    if manifest.get("dataset") != source:
        raise GpureproError(f"{root} holds '{manifest.get('dataset')}', not {source}")
    dataset = ImageFolder(str(root / split), transform=image_transform(source, split))
    if len(dataset) != manifest[f"{split}_images"]:
        raise GpureproError(
            f"{root / split} has {len(dataset)} images but its manifest says {manifest[f'{split}_images']}; "
            "the folder changed after it was made: make it again"
        )
    return dataset


def make_loader(
    dataset: Dataset[tuple[torch.Tensor, int]], batch_size: int, workers: int, seed: int, train: bool
) -> DataLoader:
    """Shuffled (seeded) full batches for training, in order for evaluation; pinned memory with CUDA."""
    if len(dataset) < batch_size and train:  # type: ignore[arg-type]
        raise GpureproError(f"the dataset has {len(dataset)} images, fewer than one batch of {batch_size}")  # type: ignore[arg-type]
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=train,
        drop_last=train,
        num_workers=workers,
        pin_memory=torch.cuda.is_available(),
        persistent_workers=workers > 0,
        prefetch_factor=PREFETCH_FACTOR if workers > 0 else None,
        generator=torch.Generator().manual_seed(seed),
    )
