"""Training batches: synthetic ones made on the device once and cycled (as the Horovod benchmark did,
so the data path costs nothing and images/s measures the GPU), or a real set through the project's
loaders (`datasets.loaders`), with worker processes, copied to the device as they come."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from ..datasets import loaders
from ..datasets.specs import SPECS
from ..errors import GpureproError

# Distinct synthetic batches cycled through: a few, so no two consecutive steps see the same tensor.
SYNTHETIC_POOL = 4
SYNTHETIC_CLASSES = 1000

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class DataOptions:
    """What `--source/--root/--like/--image-size/--num-classes/--workers/--seed` ask for."""

    source: str
    root: Path | None
    like: str
    image_size: int | None
    num_classes: int | None
    workers: int
    seed: int


@dataclass(frozen=True)
class DataPlan:
    """The resolved data: its name in results, image side, classes the model predicts."""

    name: str
    image_size: int
    num_classes: int


def plan_data(options: DataOptions) -> tuple[DataPlan, torch.utils.data.Dataset | None]:
    """Check the options and say what the data will be; a real set is opened (its manifest checked)."""
    if options.source == "synthetic":
        size = options.image_size or SPECS[options.like].height
        classes = options.num_classes or SYNTHETIC_CLASSES
        return DataPlan(f"synthetic-{size}px", size, classes), None
    if options.image_size is not None:
        raise GpureproError(
            f"--image-size is for synthetic data; {options.source} images come at their own size "
            f"({SPECS[options.source].height}x{SPECS[options.source].width} after the usual transforms)"
        )
    dataset = loaders.make_dataset(options.source, "train", options.seed, options.root)
    classes = len(dataset.classes)  # type: ignore[attr-defined]
    if options.num_classes is not None and options.num_classes < classes:
        raise GpureproError(
            f"--num-classes {options.num_classes} is fewer than the {classes} classes of {options.root}"
        )
    return DataPlan(options.source, SPECS[options.source].height, options.num_classes or classes), dataset


def synthetic_batches(
    batch: int, image_size: int, classes: int, device: torch.device, seed: int, channels_last: bool
) -> Iterator[Batch]:
    """SYNTHETIC_POOL random batches made on the device from `seed`, then cycled without end."""
    generator = torch.Generator(device=device).manual_seed(seed)
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    pool = []
    for _ in range(SYNTHETIC_POOL):
        images = torch.randn(batch, 3, image_size, image_size, generator=generator, device=device)
        labels = torch.randint(0, classes, (batch,), generator=generator, device=device)
        pool.append((images.contiguous(memory_format=memory_format), labels))
    return itertools.cycle(pool)


def loader_batches(
    dataset: torch.utils.data.Dataset, batch: int, workers: int, seed: int, device: torch.device,
    channels_last: bool,
) -> Iterator[Batch]:  # fmt: skip
    """The set's shuffled batches, epoch after epoch, copied to the device (pinned memory on CUDA)."""
    loader = loaders.make_loader(dataset, batch, workers, seed, train=True)
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    while True:
        for images, labels in loader:
            yield (
                images.to(device, non_blocking=True, memory_format=memory_format),
                labels.to(device, non_blocking=True),
            )


def make_batches(
    options: DataOptions, plan: DataPlan, dataset: torch.utils.data.Dataset | None, batch: int,
    device: torch.device, rank: int, channels_last: bool,
) -> Iterator[Batch]:  # fmt: skip
    """Each rank's batches. Every rank draws from its own seed (seed + rank): the ranks of a data-parallel
    run then see different images, as they would with a sharded sampler, and their gradients differ
    until DDP averages them."""
    seed = options.seed + rank
    if dataset is None:
        return synthetic_batches(batch, plan.image_size, plan.num_classes, device, seed, channels_last)
    return loader_batches(dataset, batch, options.workers, seed, device, channels_last)
