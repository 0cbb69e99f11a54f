"""Building a dataset beside its final place and publishing it only when it is complete.

A dataset is assembled in a hidden folder next to its destination (same file system, so moving it is a
rename), checked, and given its `manifest.json` last. Only then is it renamed into place, replacing any
earlier copy. A failure at any step (a bad checksum, a hostile entry, a missing image, a full disk)
removes the partial folder and leaves the destination as it was: an earlier good dataset survives, and
no folder without a manifest is ever taken for a complete one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import GpureproError
from ..provenance import now_iso

MANIFEST = "manifest.json"


class StagingArea:
    """A private folder beside `dest`; `publish(folder)` moves a finished folder inside it to `dest`."""

    def __init__(self, dest: Path, path: Path) -> None:
        self.dest = dest
        self.path = path

    def publish(self, folder: Path) -> None:
        if not (folder / MANIFEST).is_file():
            raise GpureproError(f"internal error: {folder} has no {MANIFEST}; refusing to publish it")
        old = None
        if self.dest.exists():
            old = self.dest.with_name(f".{self.dest.name}.old-{uuid.uuid4().hex[:8]}")
            os.rename(self.dest, old)
        os.rename(folder, self.dest)
        if old is not None:
            shutil.rmtree(old)


def _remove_leftovers(dest: Path) -> None:
    """Folders an interrupted earlier run (killed, power cut) left beside the destination."""
    for pattern in (f".{dest.name}.partial-*", f".{dest.name}.old-*"):
        for leftover in dest.parent.glob(pattern):
            shutil.rmtree(leftover, ignore_errors=True)


@contextmanager
def staging_area(dest: Path) -> Iterator[StagingArea]:
    """A staging folder for `dest`, removed when the block ends, whether or not it published."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(dest)
    path = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
    try:
        yield StagingArea(dest, path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_manifest(folder: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Write the completion marker: what the dataset holds, written after everything else."""
    manifest = {**info, "created": now_iso(), "gpurepro": __version__}
    path = folder / MANIFEST
    with path.open("w") as fh:
        json.dump(manifest, fh, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    return manifest


def read_manifest(folder: Path, how_to_make: str) -> dict[str, Any]:
    """The manifest of a finished dataset; a clear error when the folder is missing or incomplete."""
    path = folder / MANIFEST
    if not path.is_file():
        state = "is incomplete (no manifest.json)" if folder.exists() else "does not exist"
        raise GpureproError(f"dataset folder {folder} {state}; make it with: {how_to_make}")
    with path.open() as fh:
        return json.load(fh)
