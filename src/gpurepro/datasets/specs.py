"""What each real image set looks like: the synthetic stand-in copies it, and verification checks it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetSpec:
    """Classes, the image shape a model sees, and the images per split of the full set."""

    name: str
    classes: int
    channels: int
    height: int
    width: int
    train_images: int
    val_images: int

    def images(self, split: str) -> int:
        return {"train": self.train_images, "val": self.val_images}[split]

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.channels, self.height, self.width)


# Tiny-ImageNet-200: 200 classes of 64x64 images, 500 train and 50 val images per class.
TINY_IMAGENET = DatasetSpec("tiny-imagenet", 200, 3, 64, 64, 100_000, 10_000)
# ILSVRC2012: 1000 classes; images vary in size and are cropped to 224x224 for the model.
IMAGENET = DatasetSpec("imagenet", 1000, 3, 224, 224, 1_281_167, 50_000)

SPECS = {spec.name: spec for spec in (TINY_IMAGENET, IMAGENET)}
SPLITS = ("train", "val")
SOURCES = ("synthetic", *SPECS)

# Where the real sets come from. Tiny-ImageNet is public; the MD5 of the official tiny-imagenet-200.zip
# (248,100,043 bytes) is the one pinned by ContinualAI's Avalanche
# (avalanche/benchmarks/datasets/tiny_imagenet/tiny_imagenet.py: md5 = '90528d7c...') and several other
# public Tiny-ImageNet loaders that download from this address.
TINY_IMAGENET_URL = "http://cs231n.stanford.edu/tiny-imagenet-200.zip"
TINY_IMAGENET_CHECKSUM = "md5:90528d7ca1a48142e341f4ef8d21d0de"
# ImageNet needs an account, so the user downloads these official files (the names torchvision's
# ImageNet dataset expects; their MD5s are taken from torchvision where they are checked).
IMAGENET_DOWNLOAD_PAGE = "https://image-net.org/challenges/LSVRC/2012/2012-downloads.php"
IMAGENET_TRAIN_TAR = "ILSVRC2012_img_train.tar"
IMAGENET_VAL_TAR = "ILSVRC2012_img_val.tar"
IMAGENET_DEVKIT = "ILSVRC2012_devkit_t12.tar.gz"
