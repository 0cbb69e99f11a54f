"""Synthetic images: the default source, so every study runs with no network and no dataset.

Each image is generated from (seed, split, index) alone, so any worker, in any order, makes the same
item, and two runs with one seed see identical data. The image shape, the number of classes and the
images per split copy the real set the data stands in for (`specs`); labels cycle through the classes,
so every class has (nearly) the same number of images. Pixels are uniform noise: the data exercises a
study's throughput, not its accuracy, and needs no decoding, so the loader bench on it is the ceiling
to compare a real set's loader against.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.utils.data import Dataset

from .specs import SPLITS, DatasetSpec


class SyntheticImages(Dataset[tuple[torch.Tensor, int]]):
    """uint8 images of `spec.shape` (then `transform`), with labels `index % spec.classes`."""

    def __init__(
        self,
        spec: DatasetSpec,
        split: str,
        seed: int,
        transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        self.spec = spec
        self.split = split
        self.seed = seed
        self.transform = transform

    def __len__(self) -> int:
        return self.spec.images(self.split)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} images")
        rng = np.random.default_rng([self.seed, SPLITS.index(self.split), index])
        image = torch.from_numpy(rng.integers(0, 256, size=self.spec.shape, dtype=np.uint8))
        if self.transform is not None:
            image = self.transform(image)
        return image, index % self.spec.classes
