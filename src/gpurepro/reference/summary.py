"""Raw reference measurements to `tables/reference.csv`: per GPU and reference rate, the median (and the
spread) over reps, in the long format every table uses."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..results import read_raw, read_sidecar
from ..tables import describe, long_frame, point_keys


def summarise_file(path: Path | str) -> pd.DataFrame:
    rows = read_raw(path)
    keys = point_keys("reference", rows, read_sidecar(path), path, [])
    parts = [
        long_frame(keys, describe(group["value"], reference, str(group["unit"].iloc[0])))
        for reference, group in rows.groupby("reference", sort=False)
    ]
    return pd.concat(parts, ignore_index=True)


def summarise(paths: list[Path | str]) -> pd.DataFrame:
    return pd.concat([summarise_file(path) for path in paths], ignore_index=True)
