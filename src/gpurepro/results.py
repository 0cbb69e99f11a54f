"""Writing raw results: append-only, atomic, each file with its provenance sidecar.

A raw file is written under a temporary name and then hard-linked to its final name, which fails if that
name exists: a measurement on disk is never replaced, even by two jobs racing for the same path.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import ResultExistsError

# What a raw file's provenance sidecar ends in.
SIDECAR_SUFFIX = ".provenance.json"


def sidecar_path(path: Path | str) -> Path:
    """`x.csv` -> `x.provenance.json` (the provenance of one raw file)."""
    path = Path(path)
    return path.with_name(f"{path.stem}{SIDECAR_SUFFIX}")


def ensure_absent(*paths: Path | str) -> None:
    """Fail before measuring when a result already exists, rather than after."""
    for path in paths:
        for candidate in (Path(path), sidecar_path(path)):
            if candidate.exists():
                raise ResultExistsError(
                    f"{candidate} already exists; raw results are never overwritten. Move it away, or "
                    "write this run elsewhere with --config results_dir=<new folder>."
                )


def _publish(data: bytes, path: Path) -> None:
    """Write bytes to a temporary file beside `path`, then link it into place without overwriting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError as err:
            raise ResultExistsError(f"{path} appeared while measuring; kept the existing file") from err
    finally:
        os.unlink(tmp)


def write_raw(frame: pd.DataFrame, path: Path | str, provenance: dict[str, Any]) -> Path:
    """Write a raw table and its provenance sidecar, refusing to overwrite either."""
    path = Path(path)
    ensure_absent(path)
    sidecar = sidecar_path(path)
    _publish(json.dumps({**provenance, "file": path.name}, indent=2, default=str).encode(), sidecar)
    _publish(frame.to_csv(index=False).encode(), path)
    return path


def write_json(path: Path | str, record: dict[str, Any]) -> Path:
    """Write a JSON record as a raw file is written: atomically, and never over an existing one."""
    path = Path(path)
    ensure_absent(path)
    _publish(json.dumps(record, indent=2, default=str).encode(), path)
    return path


def read_sidecar(path: Path | str) -> dict[str, Any]:
    with sidecar_path(path).open() as fh:
        return json.load(fh)
