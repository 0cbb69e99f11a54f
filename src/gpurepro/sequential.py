"""Repeated looks at one claim: the confidence each look's interval is built at, so that a claim judged
again after every round of more processes is wrongly resolved no more often than one judgement at 95%.

Judging a claim after its first 3 processes and again after each round that adds one is a group
sequential test: with every look at 95%, five looks resolve a claim whose truth sits on an edge about
14% of the time instead of 5% (Armitage, McPherson and Rowe 1969). Lan and DeMets (1983) spend the
overall error alpha over the looks by a function alpha(t) of the information t in (0, 1] a look has of
the most it can have; look k's two-sided boundary c_k makes the chance of first crossing there, with
no difference at all, alpha(t_k) - alpha(t_(k-1)). Its nominal level 2 (1 - Phi(c_k)) is the level that
look's interval is built at. Two spending functions:

- `pocock` (Pocock-type, alpha log(1 + (e - 1) t)): about the same level at every look, so a claim
  three processes already resolve still resolves at the first look.
- `obrien_fleming` (O'Brien-Fleming-type, 2 - 2 Phi(z_(1-alpha/2) / sqrt(t))): very strict early, close to
  alpha at the last look.

The chance of first crossing at each look is integrated numerically over the continuation region (the
recursion of Armitage, McPherson and Rowe; Jennison and Turnbull 2000, ch. 19) on a grid of the score
statistic S_k = Z_k sqrt(t_k), a Brownian motion in t under no difference, so it is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

SPENDING = ("pocock", "obrien_fleming")
# Points of the grid over the continuation region of each look: 1e-5 of alpha against published tables.
GRID = 801


def spent(spending: str, alpha: float, t: float) -> float:
    """The error spent by information fraction t (0 < t <= 1; alpha at t = 1)."""
    t = min(max(t, 0.0), 1.0)
    if t == 0:
        return 0.0
    if spending == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    if spending == "obrien_fleming":
        return float(2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(t)))
    raise ValueError(f"spending '{spending}': one of {', '.join(SPENDING)}")


@dataclass(frozen=True)
class _Region:
    """The density of S at a look over the grid of its continuation region (|S| < c sqrt(t))."""

    t: float
    grid: np.ndarray
    density: np.ndarray

    def exit_probability(self, t: float, bound_s: float) -> float:
        """The chance that S, continuing from this look, lies beyond +-bound_s at information t."""
        sd = math.sqrt(t - self.t)
        beyond = stats.norm.sf((bound_s - self.grid) / sd) + stats.norm.cdf((-bound_s - self.grid) / sd)
        return float(np.trapezoid(self.density * beyond, self.grid))

    def next(self, t: float, bound_s: float) -> _Region:
        sd = math.sqrt(t - self.t)
        grid = np.linspace(-bound_s, bound_s, GRID)
        kernel = stats.norm.pdf((grid[:, None] - self.grid[None, :]) / sd) / sd
        return _Region(t, grid, np.trapezoid(kernel * self.density[None, :], self.grid, axis=1))


def _first_region(t: float, bound_s: float) -> _Region:
    grid = np.linspace(-bound_s, bound_s, GRID)
    return _Region(t, grid, stats.norm.pdf(grid / math.sqrt(t)) / math.sqrt(t))


def crossing_probabilities(times: Sequence[float], bounds: Sequence[float]) -> list[float]:
    """With no difference, the chance that the first look beyond its boundary (|Z_k| >= bounds[k]) is
    look k, for looks at information `times` (increasing)."""
    found = [float(2 * stats.norm.sf(bounds[0]))]
    region = _first_region(times[0], bounds[0] * math.sqrt(times[0]))
    for t, c in zip(times[1:], bounds[1:], strict=True):
        found.append(region.exit_probability(t, c * math.sqrt(t)))
        region = region.next(t, c * math.sqrt(t))
    return found


def boundaries(spending: str, alpha: float, times: Sequence[float]) -> list[float]:
    """Each look's two-sided z boundary, spending `alpha` over looks at information `times` (increasing,
    the last 1 where the most information is reached)."""
    spends = [spent(spending, alpha, t) for t in times]
    found = [float(stats.norm.isf(spends[0] / 2))]
    region = _first_region(times[0], found[0] * math.sqrt(times[0]))
    for k in range(1, len(times)):
        c = _solve(region, times[k], spends[k] - spends[k - 1])
        found.append(c)
        region = region.next(times[k], c * math.sqrt(times[k]))
    return found


def _solve(region: _Region, t: float, target: float) -> float:
    """The boundary at information t whose first crossing, continuing from `region`, has chance `target`."""

    def excess(c: float) -> float:
        return region.exit_probability(t, c * math.sqrt(t)) - target

    return float(optimize.brentq(excess, 0.5, 10.0, xtol=1e-7))


def nominal_levels(spending: str, alpha: float, times: Sequence[float]) -> list[float]:
    """Each look's nominal two-sided error, 2 (1 - Phi(c_k)): 1 minus the confidence of its interval."""
    return [float(2 * stats.norm.sf(c)) for c in boundaries(spending, alpha, times)]


def information_times(first: int, per_point: int, rounds: int) -> list[float]:
    """The information of each look as a fraction of the last's: look 1 reads `first` processes a side,
    look k one more for the side that gets it (round k - 1 of more processes), up to `per_point`; the
    information of a mean grows with its processes. Looks past the cap add none and are not counted."""
    counts = sorted({min(first + k, per_point) for k in range(rounds + 1)})
    return [count / counts[-1] for count in counts]


def widened(
    low: float, high: float, confidence: float, to: float, dof: float | None, log: bool
) -> tuple[float, float]:
    """An interval built at `confidence` rebuilt at `to` about its middle (on the log scale where `log`):
    its half-width times the ratio of Student's t quantiles at `dof` degrees of freedom (the normal's
    where None). Exact for a t or normal interval; for a bootstrap one, as wide a change."""
    if not (math.isfinite(low) and math.isfinite(high)) or to == confidence:
        return low, high
    quantile = stats.norm.isf if dof is None else (lambda p: stats.t.isf(p, dof))
    ratio = float(quantile((1 - to) / 2) / quantile((1 - confidence) / 2))
    if log and low > 0:
        middle, half = (math.log(low) + math.log(high)) / 2, (math.log(high) - math.log(low)) / 2
        return math.exp(middle - half * ratio), math.exp(middle + half * ratio)
    middle, half = (low + high) / 2, (high - low) / 2
    return middle - half * ratio, middle + half * ratio
