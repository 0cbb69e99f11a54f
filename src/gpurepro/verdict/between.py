"""A magnitude read from one process a side: its interval is the between-process spread the project
measured (config/between_process.yaml), never narrower.

One process's reps show that process's noise, not where the next process lands (a DDP step moved 3-4%
between back-to-back runs on one H100). So where every side of a claim's value comes from a single
process, its interval is at least the 95% interval of the measured between-process geometric SD: value
x/÷ GSD^(1.96 x sqrt(sides)), the sides' spreads adding in quadrature on the log scale; an interval over
the process's own reps widens to it, never the other way. A value nearer an edge of its accepted range
than that reads inconclusive at one process, not consistent by luck."""

from __future__ import annotations

import math

from ..compare import hostbound, spread
from .claims import Claim
from .reading import Values

Z95 = 1.96


def _widest(own: tuple[float, float] | None, between: tuple[float, float]) -> tuple[float, float]:
    """The process's own interval widened to the between-process one (its own where that is wider)."""
    if own is None or not all(math.isfinite(end) for end in own):
        return between
    return min(own[0], between[0]), max(own[1], between[1])


def one_process_interval(claim: Claim, values: Values) -> tuple[Values, str]:
    """The values with an interval at least the between-process one where every side is one process,
    and the words that say so ("" where nothing changes)."""
    if not values.one_process:
        return values, ""
    keys = {key: str(value) for key, value in claim.measure.where.items()}
    pace = hostbound.pace(claim.study, keys, claim.measure.metric, claim.unit, math.nan)
    found = spread.find(spread.load(), claim.study, pace, claim.measure.metric)
    sides = len(values.counts)
    if found is None:
        return (
            values,
            f"one process a side ({sides}), and no between-process spread measured for {claim.study}",
        )
    factor = found.gsd ** (Z95 * math.sqrt(sides))
    own = values.intervals or [None] * len(values.values)
    intervals = [
        _widest(mine, (v / factor, v * factor) if v >= 0 else (v * factor, v / factor))
        for v, mine in zip(values.values, own, strict=True)
    ]
    words = (
        f"one process a side: 95% interval x/÷ {factor:.4g} from the {found.describe()}, never narrower "
        "than the next process could land"
    )
    return Values(values.values, values.unit, intervals, values.processes, values.counts), words
