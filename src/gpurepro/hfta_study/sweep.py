"""Which HFTA points a sweep measures: every combination of the profile's workloads, step kinds, modes,
precisions, B values and repeats, except those whose answer another point already gives.

- Serial trains its B models one after another, each alone on the GPU: its rate is one model's at every
  B, so it is measured at `serial_b` only (the profile's serial_b_values; the smallest B by default).
  Those may lie outside the sweep's B values: quick runs on an H100 measure serial at B=1 (one model
  for min_timed_s) beside fused, concurrent and MPS points at B=8 and 32, where serial at B=8 would
  train 8 models one after another for the same rate.
- Concurrent and MPS at B=1 are one process training one model (under MPS, its only client): serial's
  B=1 point again, left out where serial runs at B=1.
- Step kinds other than torch's stock step (graphed) are this project's additions, not the paper's
  protocol, whose repeats are for the stock comparisons the claims judge: they run once.
- Repeats: a point runs in as many processes as the profile gives its kind (gpurepro/rounds.py:
  host-paced points, serial and stock steps at small B, more than GPU-bound ones).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

STOCK = "stock"
# How many processes a point runs in (its runs beyond that are not planned); None: every run planned.
Repeats = Callable[[Mapping[str, Any]], int] | None


def planned(
    point: Mapping[str, Any], serial_b: Sequence[int], b_values: Sequence[int], repeats: Repeats = None
) -> bool:
    """Whether the sweep measures `point`: serial at serial_b, the other modes at b_values, each in as
    many runs as `repeats` gives it."""
    if point.get("step", STOCK) != STOCK and int(point.get("run", 1)) > 1:
        return False
    if repeats is not None and int(point.get("run", 1)) > repeats(point):
        return False
    if point["scheme"] == "serial":
        return point["b"] in serial_b
    if point["b"] not in b_values:
        return False
    return not (point["scheme"] in ("concurrent", "mps") and point["b"] == 1 and 1 in serial_b)


def points(
    axes: Mapping[str, Sequence[Any]], serial_b: Sequence[int], repeats: Repeats = None
) -> Iterator[dict[str, Any]]:
    """Each planned point of the sweep over `axes` (wildcard name -> values; scheme and b among them,
    b the sweep's B values): serial at serial_b, which may add B values of its own."""
    b_values = list(axes["b"])
    axes = {**axes, "b": sorted(set(b_values) | set(serial_b))}
    names = list(axes)
    for values in itertools.product(*axes.values()):
        point = dict(zip(names, values, strict=True))
        if planned(point, serial_b, b_values, repeats):
            yield point


def files(
    pattern: str, axes: Mapping[str, Sequence[Any]], serial_b: Sequence[int], repeats: Repeats = None
) -> list[str]:
    """`pattern` formatted with each planned point."""
    return [pattern.format(**point) for point in points(axes, serial_b, repeats)]
