"""Which HFTA points a sweep measures: every combination of the profile's workloads, step kinds, modes,
precisions, B values and repeats, except those whose answer another point already gives.

- Serial trains its B models one after another, each alone on the GPU: its rate is one model's at every
  B, so it is measured at `serial_b` only (the profile's serial_b_values; the smallest B by default).
- Concurrent and MPS at B=1 are one process training one model (under MPS, its only client): serial's
  B=1 point again, left out where serial runs at B=1.
- Step kinds other than torch's stock step (graphed) are this project's additions, not the paper's
  protocol, whose repeats are for the stock comparisons the claims judge: they run once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

STOCK = "stock"


def planned(point: Mapping[str, Any], serial_b: Sequence[int]) -> bool:
    if point.get("step", STOCK) != STOCK and int(point.get("run", 1)) > 1:
        return False
    if point["scheme"] == "serial":
        return point["b"] in serial_b
    return not (point["scheme"] in ("concurrent", "mps") and point["b"] == 1 and 1 in serial_b)


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
