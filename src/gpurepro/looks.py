"""Which look a claim is judged at, and the confidence its intervals are built at there (sequential.py).

A family of points (HFTA, DeiT, BERT) is looked at once after its own rounds (look 1: the points a claim
reads at 3 processes) and again before each round of more processes (look k after round k - 1;
more_processes.smk); the verdict reads the last look. Each round's plan
(`<results>/more_processes/<family>/round<k>.json`) records its look and every look's confidence, so the
verdict of a run reads the levels the run was planned with: the last plan's look, or the one after it
where that plan still gave processes (the rounds ran out: its tables hold one more round). A family with
no plan (no rounds of more processes, the cpu profile) has one look, at 95%.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import registry, sequential
from .stats import CONFIDENCE

# The folder of the round plans under a device's results folder (more_processes.smk's MORE_DIR).
PLANS = "more_processes"


@dataclass(frozen=True)
class Look:
    """Look `index` (from 1) of a family, of the looks whose confidences are `levels`."""

    index: int
    levels: tuple[float, ...]
    spending: str
    alpha: float

    @property
    def confidence(self) -> float:
        return self.levels[min(self.index, len(self.levels)) - 1]

    def describe(self) -> str:
        spend = "Pocock" if self.spending == "pocock" else "O'Brien-Fleming"
        return (
            f"look {self.index} of at most {len(self.levels)}: intervals at {self.confidence:.2%} "
            f"({spend}-type spending of {self.alpha:g} over the looks)"
        )

    def record(self) -> dict[str, Any]:
        """What a round's plan records of its look."""
        return {
            "look": self.index,
            "confidence": self.confidence,
            "levels": list(self.levels),
            "spending": self.spending,
            "alpha": self.alpha,
        }


@functools.cache
def levels(spending: str, alpha: float, first: int, per_point: int, rounds: int) -> tuple[float, ...]:
    """Every look's confidence: `first` processes at look 1, one more a round up to `per_point`, for
    `rounds` rounds of more processes."""
    times = sequential.information_times(first, per_point, rounds)
    return tuple(1 - level for level in sequential.nominal_levels(spending, alpha, times))


def family_of(table: str) -> str | None:
    """The family of points a table of a study measured in processes holds (hfta, deit, bert): the one
    whose rounds a claim reading it is judged in; None for a study without rounds of processes."""
    found = [record.family for record in registry.RECORDS if record.extra_rounds and table in record.tables]
    return found[0] if found else None


def _round(path: Path) -> int:
    return int(path.stem.removeprefix("round"))


def last_look(folder: Path) -> Look | None:
    """The look a family's final tables stand at, from its round plans in `folder` (None: no plan)."""
    plans = sorted(folder.glob("round*.json"), key=_round)
    if not plans:
        return None
    plan = json.loads(plans[-1].read_text())
    if "look" not in plan:  # planned before looks were recorded: its intervals were at 95%
        return None
    found = Look(int(plan["look"]), tuple(plan["levels"]), str(plan["spending"]), float(plan["alpha"]))
    return Look(found.index + bool(plan["points"]), found.levels, found.spending, found.alpha)


def run_looks(results: Path | None) -> dict[str, Look]:
    """Each family's last look in a device's results folder (none where it holds no round plans)."""
    if results is None or not (results / PLANS).is_dir():
        return {}
    found = {folder.name: last_look(folder) for folder in sorted((results / PLANS).iterdir())}
    return {family: look for family, look in found.items() if look is not None}


def widen(
    intervals: Sequence[tuple[float, float]],
    look: Look,
    counts: Sequence[int | None],
    difference: bool,
) -> list[tuple[float, float]]:
    """95% intervals rebuilt at the look's confidence: on the log scale unless they bound a difference,
    with Student's t at the fewest processes a side less one (the widest the two sides' Welch degrees
    of freedom allow), the normal's where the table does not say."""
    known = [count for count in counts if count is not None]
    dof = min(known) - 1 if known and min(known) > 1 else None
    return [
        sequential.widened(low, high, CONFIDENCE, look.confidence, dof, not difference)
        for low, high in intervals
    ]


def of_claim(looks: Mapping[str, Look], table: str) -> Look | None:
    """The look a claim whose measure reads `table` is judged at, where its family had looks; None
    where it is judged once (its 95% intervals stand)."""
    family = family_of(table)
    return looks.get(family) if family is not None else None
