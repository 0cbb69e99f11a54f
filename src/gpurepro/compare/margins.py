"""Equivalence margins: how near B must stay to A, for each kind of figure, to read "same within noise".

An interval that includes "no change" says only that the data cannot tell a change from none; with a
host's spread behind it, it can run from -9% to +173% (one eager batch-1 process a side). So a figure is
the same within noise only where its whole 95% interval lies inside the margin of its kind (an
equivalence test, as two one-sided tests at the interval's level); a change is resolved where the
interval excludes no change; in between, the interval is too wide to tell: "unresolved at this spread".
Each margin is what a change must stay under to move none of the readings the project makes of it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Margin:
    """How far B/A may stray from 1 (or B - A from 0, for a dispersion, in percentage points) and why."""

    width: float
    why: str

    def describe(self, kind: str) -> str:
        """'margin ±5% for time' or 'margin ±1 pp for dispersion'."""
        shown = f"{self.width:g} pp" if kind == "dispersion" else f"{self.width:.0%}"
        return f"margin ±{shown} for {kind}"


TIGHTEST_TOLERANCE = Margin(
    0.05,
    "the tightest tolerance any claim places on a time or a rate (the project's own SGEMM regression "
    "checks, ±5%, config/expected/gpurepro_reference.yaml): a change inside it moves no claim's reading "
    "past its tolerance",
)
NVML_ACCURACY = Margin(
    0.10,
    "NVML documents its power readings as accurate to within ±5% of the draw, and two runs' readings err "
    "independently, so an unchanged point may read up to 10% apart on two cards or two runs",
)
MARGINS: dict[str, Margin] = {
    "time": TIGHTEST_TOLERANCE,
    "rate": TIGHTEST_TOLERANCE,
    "energy": NVML_ACCURACY,
    "power": NVML_ACCURACY,
    "dispersion": Margin(
        1.0,
        "the variability claims read spreads between GPUs of several percent (SC22's 8% average over a "
        "cluster, the seed's node spreads): a CV or a spread that moves by under 1 percentage point "
        "changes none of them",
    ),
    "other": Margin(
        0.05,
        "clocks, temperatures, memory and utilisation of a warm card settle within a few percent from one "
        "process to the next (an SGEMM's temperature: GSD 1.033 over 8 processes, "
        "config/between_process.yaml)",
    ),
}
# A dispersion's value per percentage point, by how it is stored: a CV as a fraction, max/min as
# 1 + spread / 100, a spread in %.
PER_POINT_FRACTION = 0.01
FRACTION_DISPERSIONS = {"cv", "max_over_min"}


def inside(low: float, high: float, kind: str) -> bool:
    """Whether an interval of B/A lies wholly inside the margin of `kind`."""
    width = MARGINS[kind].width
    return 1 - width <= low and high <= 1 + width


def dispersion_width(unit: str, metric: str, statistic: str, fraction_metrics: set[str]) -> float:
    """The dispersion margin in the dispersion's own stored units: 1 pp is 1.0 of a spread in %, 0.01 of
    a CV kept as a fraction or of a max/min ratio; NaN where the unit says neither (never the same)."""
    points = MARGINS["dispersion"].width
    if unit == "%":
        return points
    if metric in fraction_metrics or statistic in FRACTION_DISPERSIONS:
        return points * PER_POINT_FRACTION
    return float("nan")
