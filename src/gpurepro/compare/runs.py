"""One run's results folder (`results/<device>`): its long tables, its raw files and their sidecars."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import plausibility
from ..errors import GpureproError
from ..results import SIDECAR_SUFFIX
from ..tables import LONG_COLUMNS
from .folders import device_folder


@dataclass
class Run:
    """A results folder of one device, read lazily: tables at once, raw files when a point asks."""

    path: Path
    tables: dict[str, pd.DataFrame]
    # Tables that are not long (e.g. variability_reps, every rep in wide form): raw reps, not metrics.
    wide: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    def raw_file(self, study: str, name: str) -> Path | None:
        """The raw file `name` of a study (`<run>/<study>/raw/**/<name>`), or None where it is absent."""
        matches = _raw_index(self.path / study / "raw").get(name, [])
        return matches[0] if len(matches) == 1 else None

    def sidecars(self) -> list[dict[str, Any]]:
        """Every provenance sidecar of the run's raw files, each read once."""
        return [_read_json(path) for path in sorted(self.path.rglob(f"*{SIDECAR_SUFFIX}"))]


@functools.cache
def _raw_index(folder: Path) -> dict[str, list[Path]]:
    index: dict[str, list[Path]] = {}
    for path in folder.rglob("*.csv") if folder.is_dir() else []:
        index.setdefault(path.name, []).append(path)
    return index


@functools.cache
def _read_json(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        return json.load(fh)


@functools.cache
def read_csv(path: Path) -> pd.DataFrame:
    """A raw CSV, read once however many points ask for it (callers must not modify it)."""
    return pd.read_csv(path)


def load_run(path: Path | str) -> Run:
    """Read the tables of the device folder `path` names (folders.device_folder: `path` itself, or the
    one device's folder in it); fail naming the folder, or the device folders to choose from."""
    path = device_folder(path)
    folder = path / "tables"
    tables, wide = {}, {}
    for csv in sorted(folder.glob("*.csv")):
        table = pd.read_csv(csv)
        # a table made before aggregation refused impossible rates may still hold one: compare none
        plausibility.check_table(table, str(csv))
        if set(LONG_COLUMNS) <= set(table.columns):
            tables[csv.stem] = table
        else:
            wide[csv.stem] = table
    if not tables:
        raise GpureproError(f"{folder}: no long tables (CSV with columns {', '.join(LONG_COLUMNS)})")
    return Run(path.resolve(), tables, wide)
