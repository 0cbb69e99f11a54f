"""The ImageNet files the user must supply, where they go, and what to say when one is missing.

Kept apart from the extraction code and free of heavy imports: the workflow calls it while it parses, so
a missing archive stops the run at start with what to download and where to put it.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import GpureproError
from .specs import IMAGENET_DEVKIT, IMAGENET_DOWNLOAD_PAGE, IMAGENET_TRAIN_TAR, IMAGENET_VAL_TAR

ROLES = ("train_tar", "val_tar", "val_labels")


def check_archives(train_tar: Path, val_tar: Path, val_labels: Path) -> None:
    """Fail with what to get and where to put it when an archive is not where config says."""
    wanted = [
        ("train archive", train_tar, f"the official {IMAGENET_TRAIN_TAR}"),
        ("val archive", val_tar, f"the official {IMAGENET_VAL_TAR}"),
        ("val labels", val_labels, f"the official {IMAGENET_DEVKIT}, or a labels text file"),
    ]
    missing = [f"{role} {path} ({what})" for role, path, what in wanted if not path.is_file()]
    if missing:
        raise GpureproError(
            "ImageNet needs the official ILSVRC2012 archives, which cannot be downloaded without an "
            f"account; missing: {'; '.join(missing)}. Log in at {IMAGENET_DOWNLOAD_PAGE}, download "
            f"{IMAGENET_TRAIN_TAR} (138 GB), {IMAGENET_VAL_TAR} (6.3 GB) and {IMAGENET_DEVKIT} (2.5 MB, "
            "under 'Development kit (Task 1 & 2)'), and put them at those paths (config "
            "data.imagenet.train_tar, val_tar and val_labels; relative paths are inside data_dir). "
            "val_labels may instead be a text file of '<val image> <wnid>' lines."
        )


def archive_paths(settings: dict[str, str], data_dir: str) -> dict[str, str]:
    """Config `data.imagenet` paths by role (check_archives' arguments), relative ones inside data_dir."""
    return {
        key: settings[key] if Path(settings[key]).is_absolute() else f"{data_dir}/{settings[key]}"
        for key in ROLES
    }
