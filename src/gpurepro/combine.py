"""One table across devices: the same study table of every device's results folder
(<results>/<profile>/tables/<name>.csv), stacked, each row keeping the profile it was measured under."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .errors import GpureproError


def results_profile(path: Path | str) -> str:
    """The profile a table belongs to: the folder above tables/ (<results>/<profile>/tables/x.csv)."""
    path = Path(path)
    if path.parent.name != "tables":
        raise GpureproError(f"{path} is not a <results>/<profile>/tables/<name>.csv table")
    return path.parent.parent.name


def combine(paths: list[Path | str]) -> pd.DataFrame:
    """The tables stacked, sorted by profile; all must be the same table (one file name)."""
    names = sorted({Path(p).name for p in paths})
    if len(names) != 1:
        raise GpureproError(f"combine one table at a time; got {', '.join(names) or 'none'}")
    frames = []
    for path in sorted(paths, key=results_profile):
        frame = pd.read_csv(path)
        profile = results_profile(path)
        if "profile" not in frame.columns:
            frame.insert(0, "profile", profile)
        elif not (frame["profile"].astype(str) == profile).all():
            raise GpureproError(f"{path} holds rows of profile(s) {sorted(frame['profile'].unique())}")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
