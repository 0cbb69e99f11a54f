"""Grading B against A: same within noise, faster/slower (higher/lower) by X%, or unresolved at this spread.

One process is one sample: the reps inside a process show that process's noise, not how far the next
process lands (on one host a host-paced figure moves 10-60% between processes). So a ratio B/A is judged
by an interval across processes (match.py builds it): Welch's t-interval where both sides measured the
point in at least two processes, else the between-process spread the project measured for that kind of
figure (config/between_process.yaml). A change is resolved only where that interval excludes 1, and a
figure is the same within noise only where the interval lies inside the equivalence margin of its kind
(margins.py); an interval that does neither is too wide to tell: unresolved at this spread. Where no
interval exists (a study without a measured spread), the old NOISE_FLOOR decides, and the row says so.
Counts are compared as counts (counts.py), never by a time's spread.

Dispersions (a CV, a spread between GPUs) are read in their own units, as B - A with the interval of the
difference: a ratio of two near-zero spreads (0.20% -> 1.62%, "+701%") says nothing of its noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..stats import Interval
from . import counts, margins

SAME = "same within noise"
UNRESOLVED = "unresolved at this spread"
FASTER, SLOWER, HIGHER, LOWER = "faster", "slower", "higher", "lower"
NOT_COMPARABLE = "not comparable"
# The grades that name no change beyond noise
NOT_A_CHANGE = (SAME, UNRESOLVED, NOT_COMPARABLE)

# Kind of a metric: its direction, and the noise floor used where no interval exists (a study without a
# measured between-process spread). Time and rate are speeds (faster/slower); energy is lower-is-better;
# the rest (power, clocks, counts) have no better side. A count (throttled reps) is compared as a count.
LOWER_IS_BETTER, HIGHER_IS_BETTER, NEUTRAL = "lower is better", "higher is better", "no better side"
KINDS = {
    "time": LOWER_IS_BETTER,
    "rate": HIGHER_IS_BETTER,
    "energy": LOWER_IS_BETTER,
    "power": NEUTRAL,
    "dispersion": NEUTRAL,
    "count": NEUTRAL,
    "other": NEUTRAL,
}
# |ratio - 1| below which a ratio without an interval is "same within noise": timings and rates of a warm
# GPU repeat within a few percent run to run (the sgemm and inference reps here spread over an IQR of
# 0.1-3%); energy and power windows read NVML's counter, which adds its own few percent. Dispersions are
# never graded by a floor (read as differences, by their intervals only); their entry stays for callers.
NOISE_FLOOR = {"time": 0.03, "rate": 0.03, "energy": 0.05, "power": 0.05, "dispersion": 0.5, "other": 0.05}
# Metrics whose unit says nothing of their kind, or says the wrong one (a window's length is not a speed).
METRIC_KINDS = {
    "latency": "time",
    "time": "time",
    "step_time": "time",
    "wall_time": "time",
    "throughput": "rate",
    "rate": "rate",
    "speedup_vs_1_gpu": "rate",
    "speedup": "rate",
    "energy_window": "other",
}
RATE_UNITS = ("/s",)
TIME_UNITS = {"ms", "s", "us"}


# A quantity that measures spread rather than a centre: by metric, or by the statistic taken of a metric.
DISPERSION_METRICS = {"rep_cv"}
DISPERSION_STATISTICS = {"cv", "spread_pct", "max_over_min"}


def metric_kind(metric: str, unit: str, statistic: str = "") -> str:
    """time, rate, energy, power, dispersion, count or other: a spread by its metric or statistic, a count
    by its unit, else from the metric's name where listed, else from its unit."""
    if metric in DISPERSION_METRICS or statistic in DISPERSION_STATISTICS:
        return "dispersion"
    if counts.is_count(unit):
        return "count"
    if metric in METRIC_KINDS:
        return METRIC_KINDS[metric]
    if unit in TIME_UNITS:
        return "time"
    if unit.endswith(RATE_UNITS):
        return "rate"
    return {"J": "energy", "W": "power"}.get(unit, "other")


PERCENT_UNITS = {"%"}


@dataclass(frozen=True)
class Grade:
    grade: str  # SAME, UNRESOLVED, FASTER, SLOWER, HIGHER, LOWER
    change_pct: float  # (ratio - 1) * 100; NaN for a dispersion (read as a difference)
    resolved: bool  # the change exceeds the noise (its interval, else the floor)
    basis: str  # how it was judged
    better: str  # "B better", "B worse", or "" (same, or a metric with no better side)
    change: str = ""  # the change as read, where it is not a percentage: "0.20% -> 1.62% (+1.42 pp)"

    def describe(self) -> str:
        change = self.change or f"{self.change_pct:+.1f}%"
        if self.grade in (SAME, UNRESOLVED):
            return f"{self.grade} ({change}; {self.basis})"
        if self.change:
            return f"{self.grade}: {change} (resolved; {self.basis})"
        return f"{self.grade} by {abs(self.change_pct):.1f}% (resolved; {self.basis})"


def interval_text(interval: Interval) -> str:
    return f"{interval.confidence:.0%} interval [{interval.low:.4g}, {interval.high:.4g}]"


def _verdict(
    up: bool, resolved: bool, kind: str, change_pct: float, basis: str, change: str = "", same: bool = True
) -> Grade:
    """The grade's words: faster/slower for times and rates, higher/lower for the rest, and which side
    is better where the kind has a better side; an unresolved change is the same within noise only where
    `same` (its interval lies inside the kind's margin), else unresolved at this spread."""
    if not resolved:
        return Grade(SAME if same else UNRESOLVED, change_pct, False, basis, "", change)
    direction = KINDS[kind]
    if kind == "time":
        word = SLOWER if up else FASTER
    elif kind == "rate":
        word = FASTER if up else SLOWER
    else:
        word = HIGHER if up else LOWER
    better = (
        "" if direction == NEUTRAL else ("B better" if up == (direction == HIGHER_IS_BETTER) else "B worse")
    )
    return Grade(word, change_pct, True, basis, better, change)


def grade(ratio: float, interval: Interval | None, kind: str, basis: str = "") -> Grade:
    """Grade B/A = `ratio` of a metric of `kind`: resolved where its interval (across processes, or from
    the measured between-process spread) excludes 1, the same where it lies inside the kind's margin,
    else unresolved; without an interval, resolved where it reaches the kind's noise floor (which lies
    inside the margin). `basis` says which interval it is (the margin's or floor's text is added here)."""
    same = True
    if interval is not None and interval.known:
        shown = f"{interval_text(interval)}, {margins.MARGINS[kind].describe(kind)}"
        basis = f"{basis}, {shown}" if basis else shown
        resolved = interval.excludes(1.0)
        same = margins.inside(interval.low, interval.high, kind)
    else:
        floor = NOISE_FLOOR[kind]
        why = basis or (f"no interval; {interval.method}" if interval is not None else "no interval")
        basis = f"{why}; noise floor {floor:.0%} for {kind}"
        resolved = abs(ratio - 1) >= floor
    return _verdict(ratio > 1, resolved and ratio != 1, kind, (ratio - 1) * 100, basis, same=same)


def dispersion_scale(unit: str, metric: str, statistic: str) -> tuple[float, str, str]:
    """How a dispersion reads: (factor, value suffix, difference suffix). A spread in % and a CV (a
    fraction) read in percent and their difference in percentage points; the rest in their own unit."""
    if unit in PERCENT_UNITS:
        return 1.0, "%", " pp"
    if metric in DISPERSION_METRICS or statistic == "cv":
        return 100.0, "%", " pp"
    return 1.0, "", f" {unit}" if unit not in ("", "1") else ""


def dispersion_change(a: float, b: float, unit: str, metric: str, statistic: str) -> str:
    """'0.20% -> 1.62% (+1.42 pp)': both values and their difference, in the dispersion's own units."""
    factor, suffix, points = dispersion_scale(unit, metric, statistic)
    if suffix == "%":  # percentages to two decimals: 0.20% -> 1.62% (+1.42 pp)
        return f"{a * factor:.2f}% -> {b * factor:.2f}% ({(b - a) * factor:+.2f}{points})"
    return f"{a:.4g}{suffix} -> {b:.4g}{suffix} ({b - a:+.4g}{points})"


def grade_difference(
    a: float,
    b: float,
    interval: Interval | None,
    kind: str,
    basis: str,
    change: str,
    change_pct: float,
    margin: float,
) -> Grade:
    """Grade B - A by the interval of the difference: resolved only where it excludes 0, the same only
    where it lies within +-`margin` (in the values' own units) or the values are equal. Without an
    interval nothing is resolved, and unequal values are unresolved (`basis` says why)."""
    known = interval is not None and interval.known
    resolved = known and interval.excludes(0.0) and a != b  # type: ignore[union-attr]
    same = a == b or (known and -margin <= interval.low and interval.high <= margin)  # type: ignore[union-attr]
    return _verdict(b > a, resolved, kind, change_pct, basis, change, same=bool(same))


def grade_counts(a: np.ndarray, b: np.ndarray, sides: str) -> Grade:
    """Counts compared as counts (counts.py): the same where the rates per process are equal, resolved
    where the exact interval of their ratio excludes 1, else unresolved."""
    interval = counts.rate_ratio_interval(a, b)
    change = counts.describe(a, b)
    rates_equal = float(np.sum(a)) * len(b) == float(np.sum(b)) * len(a)
    if rates_equal:
        return Grade(SAME, 0.0, False, f"{sides}: counts compared as counts, equal", "", change)
    basis = f"{sides}: counts compared as counts, {counts.METHOD}, rate ratio {interval_text(interval)}"
    up = float(np.sum(b)) * len(a) > float(np.sum(a)) * len(b)
    return _verdict(up, interval.excludes(1.0), "count", math.nan, basis, change, same=False)


def finite(value: float) -> bool:
    return value is not None and math.isfinite(value)
