"""Grading a ratio B/A: same within noise, faster/slower (higher/lower) by X%, resolved or not.

With raw reps on both sides the ratio's interval is the project's percentile bootstrap
(stats.ratio_interval). Reps say how much a metric moves within one run; a second run adds what changes
between runs (clocks, temperature, the host's load), which the reps cannot see. So a change is resolved
only where the interval excludes 1 and the change is at least its kind's NOISE_FLOOR: a 0.1% change
in a step time can be resolved by 1,000 reps and still be no difference between two runs. Without reps
(a metric computed once per run, or one rep) the floor alone decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..stats import Interval

SAME = "same within noise"
FASTER, SLOWER, HIGHER, LOWER = "faster", "slower", "higher", "lower"
NOT_COMPARABLE = "not comparable"

# Kind of a metric: its direction and the noise floor used where there are no reps. Time and rate are
# speeds (faster/slower); energy is lower-is-better; the rest (power, clocks, counts) have no better side.
LOWER_IS_BETTER, HIGHER_IS_BETTER, NEUTRAL = "lower is better", "higher is better", "no better side"
KINDS = {
    "time": LOWER_IS_BETTER,
    "rate": HIGHER_IS_BETTER,
    "energy": LOWER_IS_BETTER,
    "power": NEUTRAL,
    "dispersion": NEUTRAL,
    "other": NEUTRAL,
}
# |ratio - 1| below which a ratio without reps is "same within noise": timings and rates of a warm GPU
# repeat within a few percent run to run (the sgemm and inference reps here spread over an IQR of 0.1-3%);
# energy and power windows read NVML's counter, which adds its own few percent.
# A dispersion (a CV, a spread between GPUs) estimated from a few reps is itself uncertain: from 10 reps
# a coefficient of variation is known only to about +-25% (1 / sqrt(2 (n - 1))), so only a change beyond
# half of it is read.
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
    "energy_window": "other",
}
RATE_UNITS = ("/s",)
TIME_UNITS = {"ms", "s", "us"}


# A quantity that measures spread rather than a centre: by metric, or by the statistic taken of a metric.
DISPERSION_METRICS = {"rep_cv"}
DISPERSION_STATISTICS = {"cv", "spread_pct", "max_over_min"}


def metric_kind(metric: str, unit: str, statistic: str = "") -> str:
    """time, rate, energy, power, dispersion or other: a spread by its metric or statistic, else from the
    metric's name where listed, else from its unit."""
    if metric in DISPERSION_METRICS or statistic in DISPERSION_STATISTICS:
        return "dispersion"
    if metric in METRIC_KINDS:
        return METRIC_KINDS[metric]
    if unit in TIME_UNITS:
        return "time"
    if unit.endswith(RATE_UNITS):
        return "rate"
    return {"J": "energy", "W": "power"}.get(unit, "other")


@dataclass(frozen=True)
class Grade:
    grade: str  # SAME, FASTER, SLOWER, HIGHER, LOWER
    change_pct: float  # (ratio - 1) * 100
    resolved: bool  # the change exceeds the noise (interval or floor)
    basis: str  # how it was judged
    better: str  # "B better", "B worse", or "" (same, or a metric with no better side)

    def describe(self) -> str:
        if self.grade == SAME:
            return f"{SAME} ({self.change_pct:+.1f}%; {self.basis})"
        return f"{self.grade} by {abs(self.change_pct):.1f}% (resolved; {self.basis})"


def grade(ratio: float, interval: Interval | None, kind: str) -> Grade:
    """Grade B/A = `ratio` of a metric of `kind`, by its interval where known, else by the noise floor."""
    change = (ratio - 1) * 100
    if interval is not None and interval.known:
        basis = f"{interval.confidence:.0%} interval [{interval.low:.4g}, {interval.high:.4g}] over reps"
        resolved = interval.excludes(1.0) and abs(ratio - 1) >= NOISE_FLOOR[kind]
    else:
        floor = NOISE_FLOOR[kind]
        why = f"; {interval.method}" if interval is not None else ""
        basis = f"no reps{why}: noise floor {floor:.0%} for {kind}"
        resolved = abs(ratio - 1) >= floor
    if not resolved or ratio == 1:
        return Grade(SAME, change, False, basis, "")
    up = ratio > 1
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
    return Grade(word, change, True, basis, better)


def finite(value: float) -> bool:
    return value is not None and math.isfinite(value)
