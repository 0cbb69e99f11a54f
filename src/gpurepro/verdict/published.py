"""The claims a figure marks, and how the verdict judged them on the figure's own tables: one paper's
claims file and the hardware table, through the verdict's own loader and judge, so that a figure draws
the very numbers (computed, scaled, widened) the verdict judges. Kept in the verdict (not in plotting.py,
which every figure and the comparison import) so that the verdict's modules are loaded only by the
figures that mark claims."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..errors import GpureproError
from ..hardware import Gpu, load_hardware
from ..plotting import Band
from ..profiles import project_root
from .claims import Claim
from .loading import load_claims
from .statuses import (
    DIRECTION_HOST,
    DIRECTION_UNTESTED,
    HOST_DEPENDENT,
    NOT_COMPARABLE,
    NOT_MEASURED,
    NOT_MEASURED_QUICK,
    NOT_TESTABLE,
    SHOWN,
)

# Results whose reading sets no range against a value: nothing of theirs is drawn as judged.
NO_RANGE = (NOT_TESTABLE, NOT_COMPARABLE, SHOWN, NOT_MEASURED, NOT_MEASURED_QUICK)


def study_claims(name: str) -> tuple[list[Claim], dict[str, Gpu]]:
    """The claims of config/expected/<name>.yaml and the hardware table."""
    hardware = load_hardware()
    path = project_root() / "config" / "expected" / f"{name}.yaml"
    return load_claims([path], hardware=hardware), hardware


@dataclass(frozen=True)
class Judged:
    """One claim as the verdict judged it here: its measured values (one, or every row's for `reduce:
    each`), the interval each was judged by (widened to the levels of variation it spans; NaN ends where
    it has none) and the accepted range as the verdict prints it (scaled, with tolerance; a range stated
    across the paper's models ends at its stated high end; an open end infinite)."""

    claim: Claim
    status: str
    values: tuple[float, ...]
    intervals: tuple[tuple[float, float], ...]
    accepted: tuple[float, float]
    result: str = ""

    @property
    def host_dependent(self) -> bool:
        """Whether its magnitude rests on a host-paced figure the verdict left host-dependent (shown,
        not counted): a figure draws it so, as the verdict words it."""
        return self.result in (DIRECTION_HOST, HOST_DEPENDENT)

    def band(self, index: int = 0, one_sided: bool = False) -> Band:
        """Its `index`th value as the band a figure draws (plotting.draw_judged)."""
        return Band(
            value=self.values[index], interval=self.intervals[index], accepted=self.accepted,
            host_dependent=self.host_dependent, one_sided=one_sided, claim=self.claim.id, status=self.status,
        )  # fmt: skip

    @property
    def range_tested(self) -> bool:
        """Whether the verdict read the value against its accepted range: not where it judged the
        direction alone (a range that cannot fail: the verdict prints none, so no figure draws one)."""
        return self.result != DIRECTION_UNTESTED


def judged(name: str, tables: dict[str, pd.DataFrame], gpu_count: int | None = None) -> list[Judged]:
    """The claims of config/expected/<name>.yaml that the verdict read against a range on these tables:
    not an ordering, and not one it could not measure, test or compare, or showed as information only."""
    claims, hardware = study_claims(name)
    return _ranged(claims, hardware, tables, gpu_count)


def drawn_on(plot: str, tables: dict[str, pd.DataFrame], gpu_count: int | None = None) -> list[Judged]:
    """Every claim whose `plot` is this figure (of any claims file), as judged() reads them on these tables:
    each claim judged among all of them, as the verdict judges it (a claim read through another's figure
    finds that claim)."""
    hardware = load_hardware()
    claims = load_claims([project_root() / "config" / "expected"], hardware=hardware)
    return [reading for reading in _ranged(claims, hardware, tables, gpu_count) if reading.claim.plot == plot]


def judged_on(plot: str, tables: dict[str, pd.DataFrame], notes: list[str]) -> list[Judged]:
    """drawn_on() for a figure: where the claims do not load, none, and a note saying why (the figure
    is still drawn)."""
    try:
        return drawn_on(plot, tables)
    except GpureproError as error:
        notes.append(f"claims not judged here: {error}")
        return []


def _ranged(
    claims: list[Claim], hardware: dict[str, Gpu], tables: dict[str, pd.DataFrame], gpu_count: int | None
) -> list[Judged]:
    from .evaluate import evaluate  # the judge: loaded only by the figures that draw its readings

    drawn = []
    for outcome in evaluate(claims, tables, hardware, gpu_count):
        if outcome.claim.order or not outcome.values or outcome.result in NO_RANGE:
            continue
        intervals = outcome.intervals or ((math.nan, math.nan),) * len(outcome.values)
        drawn.append(
            Judged(
                outcome.claim, outcome.status, outcome.values, intervals, outcome.shown_range, outcome.result
            )
        )
    return drawn
