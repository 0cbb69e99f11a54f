"""A claim's interval, at least as wide as the highest level of variation its reading spans (levels.py).

A claim read against a paper is read against a figure measured on other machines, so its interval is
never narrower than the spread between machines of one GPU model, however many processes stand behind
it: three serial HFTA processes of one run agreed within 3% (an interval of [9.44, 11.14]x) while the same
plan on four H200 machines read 9.58 to 13.08x. Each side of the reading (a point, a speedup's baseline, a
point subtracted) carries the spread of its study, pace and kind at the highest level measured up to
machines: the processes level shrunk over its n processes, the runs and machines levels whole. The sides
add in quadrature, on the log scale for a value or ratio (value x/÷ exp(1.96 sqrt(sum ln^2 GSD))), on
the linear scale for a difference (each side's 1.96 x value x ln GSD). The interval the run's own
processes give widens to it, never the other way; a value nearer an edge than that does not resolve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .claims import Claim
from .hostpaced import PacedSide
from .levels import CLAIM_SPANS, Levels, SideSpread, kind_of, levels_file, side_spread
from .reading import Values

Z95 = 1.96


@dataclass(frozen=True)
class Widened:
    """The values with their widened intervals, the words that say how, and whether every host-paced side
    has a between-machine spread measured (else its magnitude cannot resolve)."""

    values: Values
    words: str
    host_resolvable: bool


def _widest(own: tuple[float, float] | None, level: tuple[float, float]) -> tuple[float, float]:
    """The run's own interval widened to the level's (its own where that is wider)."""
    if own is None or not all(math.isfinite(end) for end in own):
        return level
    return min(own[0], level[0]), max(own[1], level[1])


def _factor(spreads: list[SideSpread]) -> float:
    """The 95% factor of a value or ratio whose sides carry these spreads (log scale, in quadrature)."""
    return math.exp(Z95 * math.sqrt(sum(math.log(s.gsd) ** 2 for s in spreads)))


def _ratio_interval(value: float, spreads: list[SideSpread]) -> tuple[float, float]:
    factor = _factor(spreads)
    return (value / factor, value * factor) if value >= 0 else (value * factor, value / factor)


def _difference_interval(
    value: float, parts: tuple[float, ...], spreads: list[SideSpread]
) -> tuple[float, float]:
    terms = [(abs(part) * math.log(s.gsd)) ** 2 for part, s in zip(parts, spreads, strict=True)]
    half = Z95 * math.sqrt(sum(terms))
    return value - half, value + half


def level_interval(claim: Claim, values: Values, sides: list[PacedSide], levels: Levels) -> Widened:
    """The values with every interval at least the spread of the highest level the claim spans."""
    kind = kind_of(claim.unit)
    counts = list(values.counts)
    if all(count is None for count in counts):
        # a table that names no processes (an older table, or one made by hand): read as it stands
        return Widened(values, "", True)
    if len(sides) == 1 and len(counts) > 1:
        # a row that is itself a ratio of two processes of one point (a DDP speedup over its 1-GPU run)
        sides = sides * len(counts)
    elif len(sides) != len(counts):
        # sides that do not pair with the counts the table gave: each side read as one process
        counts = [None] * len(sides)
    spreads: list[SideSpread] = []
    unmeasured: list[str] = []
    for side, count in zip(sides, counts, strict=True):
        found = side_spread(levels, claim.study, side.pace, kind, count, CLAIM_SPANS)
        if found is None:
            unmeasured.append(side.label)
        else:
            spreads.append(found)
    if unmeasured or not spreads:
        what = ", ".join(unmeasured) or claim.id
        return Widened(
            values, f"no spread of its levels of variation recorded for {claim.study} {kind} ({what})", False
        )
    paired = zip(spreads, sides, strict=True)
    host_resolvable = all(found.machines_measured for found, side in paired if side.host_paced)
    own = values.intervals or [None] * len(values.values)
    if values.parts and len(values.parts) == len(spreads):
        level = [_difference_interval(v, values.parts, spreads) for v in values.values]
    else:
        level = [_ratio_interval(v, spreads) for v in values.values]
    intervals = [_widest(mine, span) for mine, span in zip(own, level, strict=True)]
    described = "; ".join(
        f"{side.label}: {s.describe(count)}" for side, s, count in zip(sides, spreads, counts, strict=True)
    )
    one = "one process a side: " if all(count == 1 for count in counts) else ""
    factor = "" if values.parts else f"95% interval x/÷ {_factor(spreads):.4g}, "
    words = f"{one}{factor}at least the spread between machines it spans ({described}; {levels_file()})"
    widened = Values(values.values, values.unit, intervals, values.processes, values.counts, values.parts)
    return Widened(widened, words, host_resolvable)
