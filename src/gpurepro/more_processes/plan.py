"""The next round of extra processes: for each claim still inconclusive, its points below the minimum of
processes all get one; past the minimum, only its noisier side (the point whose figure spreads most over
its processes) does, so the processes go where the interval is widest. A point stops at the budget's
processes per point; a quick run's budget also caps the extra processes in all (about three minutes)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .. import rounds
from .points import Point

# No point a claim reads stands on fewer processes: with two, Welch's t has about two degrees of freedom
# and one slow process moves a reading across an edge (HFTA's headline flipped between two runs so).
MIN_PROCESSES = rounds.CLAIM_PROCESSES


@dataclass(frozen=True)
class Budget:
    per_point: int  # processes a point may reach in all
    extra: int | None = None  # extra processes in all over every round (None: no cap beyond per_point)
    spent: int = 0  # extra processes the earlier rounds ran

    @property
    def left(self) -> float:
        return math.inf if self.extra is None else max(self.extra - self.spent, 0)


def _noisier_first(point: Point) -> tuple[float, int]:
    """Sort key: the largest spread first (an unknown spread first of all), then the fewest processes."""
    spread = math.inf if math.isnan(point.gsd) else point.gsd
    return -spread, len(point.runs)


def claim_round(points: list[Point], budget: Budget) -> list[Point]:
    """The points of one inconclusive claim that get a process this round."""
    open_points = [p for p in points if len(p.runs) < budget.per_point]
    below = [p for p in open_points if len(p.runs) < MIN_PROCESSES]
    if below:
        return below
    return sorted(open_points, key=_noisier_first)[:1]


def next_round(
    inconclusive: Iterable[list[Point]], budget: Budget, read: Iterable[list[Point]] = ()
) -> list[Point]:
    """Every point that gets one more process this round, each once, within the budget: first each point
    any judged claim reads (`read`) that stands on fewer than MIN_PROCESSES, then the inconclusive
    claims' (claim_round), claims in order. None when nothing is inconclusive or short of processes, or
    the budget is spent: the rounds end."""
    topped_up = [[p for p in points if len(p.runs) < MIN_PROCESSES] for points in read]
    wanted = [*topped_up, *(claim_round(points, budget) for points in inconclusive)]
    chosen: dict[tuple, Point] = {}
    for points in wanted:
        for point in points:
            if point.key in chosen or len(point.runs) >= budget.per_point:
                continue
            if len(chosen) >= budget.left:
                return list(chosen.values())
            chosen[point.key] = point
    return list(chosen.values())


def read_plan(path: Path | str) -> list[dict]:
    """The points a round's plan gives one more process: each its family (`study`: hfta, deit, bert) and
    its `wildcards`, the run it takes among them."""
    with Path(path).open() as fh:
        return json.load(fh)["points"]
