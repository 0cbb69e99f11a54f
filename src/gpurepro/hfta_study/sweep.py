"""Which HFTA points a sweep measures: every combination of the profile's workloads, step kinds, modes,
precisions, B values and repeats, except those whose answer another point already gives.

- Serial trains its B models one after another, each alone on the GPU: its rate is one model's at every
  B, so it is measured at `serial_b` only (the profile's serial_b_values; the smallest B by default).
- Concurrent at B=1 is one process training one model: serial's B=1 point again, left out where serial
  runs at B=1.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any


def planned(point: Mapping[str, Any], serial_b: Sequence[int]) -> bool:
    if point["scheme"] == "serial":
        return point["b"] in serial_b
    return not (point["scheme"] == "concurrent" and point["b"] == 1 and 1 in serial_b)


def points(axes: Mapping[str, Sequence[Any]], serial_b: Sequence[int]) -> Iterator[dict[str, Any]]:
    """Each planned point of the sweep over `axes` (wildcard name -> values; scheme and b among them)."""
    names = list(axes)
    for values in itertools.product(*axes.values()):
        point = dict(zip(names, values, strict=True))
        if planned(point, serial_b):
            yield point


def files(pattern: str, axes: Mapping[str, Sequence[Any]], serial_b: Sequence[int]) -> list[str]:
    """`pattern` formatted with each planned point."""
    return [pattern.format(**point) for point in points(axes, serial_b)]
