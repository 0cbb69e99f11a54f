"""A claim selects one point: each `where` pins every column that tells a table's points apart
(config/points.yaml), so that a filter left open cannot read N=25536 where the claim means N=16384, or a
mix of GPUs or backends. Checked when the claims are loaded, so a bad claim stops the run at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import GpureproError
from ..profiles import project_root
from ..schema import first_error, read_yaml

# Reductions over several points on purpose: every point judged, or the extreme one.
OVER_POINTS = ("each", "min", "max")
PATTERN_CHARACTERS = set("*?[")

PointKeys = dict[str, tuple[str, ...]]


def default_path() -> Path:
    return project_root() / "config" / "points.yaml"


def default_schema() -> Path:
    return project_root() / "workflow" / "schemas" / "points.schema.yaml"


def load_points(path: Path | str | None = None, schema: Path | str | None = None) -> PointKeys:
    """Each table's point keys; a missing or malformed file is an error naming it and the key."""
    path = Path(path) if path else default_path()
    data = read_yaml(path, "point keys file")
    problem = first_error(data, Path(schema) if schema else default_schema())
    if problem:
        raise GpureproError(f"bad point keys file {path}: {problem}")
    return {table: tuple(keys) for table, keys in data.items()}


def open_keys(table: str, where: dict[str, Any], points: PointKeys) -> list[str]:
    """The point keys of `table` that `where` leaves open: absent, or a pattern that may match several."""
    return [
        key
        for key in points.get(table, ())
        if key not in where or isinstance(where[key], str) and bool(PATTERN_CHARACTERS & set(where[key]))
    ]


def check_selection(
    table: str, where: dict[str, Any], reduce: str, points: PointKeys, place: str, key: str
) -> None:
    """Stop where a selection that should read one point leaves a point key open."""
    if reduce in OVER_POINTS:
        return
    left_open = open_keys(table, where, points)
    if left_open:
        raise GpureproError(
            f"{place}: key {key}.where: matches rows of several points of tables/{table}.csv: it leaves "
            f"{', '.join(left_open)} open (pin each to one value, or reduce over the points with "
            f"{' / '.join(OVER_POINTS)}; config/points.yaml lists what tells the points apart)"
        )
