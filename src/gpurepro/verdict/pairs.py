"""The scaling rule checked against published pairs: two absolute figures of one source, one table row
apart only in the GPU (NVIDIA's ResNet-50 images/s on an A100 80GB and a V100), give the ratio the
source itself measured between the two GPUs; the rule (scaling.scale_factor, datasheet against datasheet)
predicts one from the other. Their gap is the rule's error on that pair, and the generations the pair
bridges are how far that error has been checked (scaling.MAX_DATASHEET_GENERATIONS)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..hardware import Gpu
from .claims import ABSOLUTE, REPRODUCTION, Claim
from .ranges import expected_ends
from .scaling import NoReference, scale_factor


@dataclass(frozen=True)
class PairCheck:
    """One published pair: the rule's predicted ratio of the newer GPU's figure over the older's against
    the ratio the source published."""

    older: Claim
    newer: Claim
    published: float
    predicted: float
    generations: int | None

    @property
    def error(self) -> float:
        """The rule's relative error: predicted / published - 1 (+0.15: 15% over)."""
        return self.predicted / self.published - 1

    def describe(self) -> str:
        older, newer = self.older.gpus[0], self.newer.gpus[0]
        return (
            f"{older} -> {newer}: published {self.published:.3g}x, rule {self.predicted:.3g}x, "
            f"error {self.error:+.1%} over {self.generations} generation(s) "
            f"({self.older.id}, {self.newer.id}; scaling uncertainty ±{self.older.scaling.uncertainty:.0%})"  # type: ignore[union-attr]
        )


def _key(claim: Claim) -> tuple[object, ...]:
    """What makes two claims one table row apart only in the GPU: source, table, metric, where, unit."""
    where = tuple(sorted((k, str(v)) for k, v in claim.measure.where.items()))
    return (
        claim.paper,
        claim.measure.table,
        claim.measure.metric,
        claim.measure.statistic,
        where,
        claim.unit,
    )


def _figure(claim: Claim) -> float | None:
    """The published figure: a value, or the lower bound a figure is held to (min alone)."""
    if claim.expected.value is not None:
        return claim.expected.value
    low, high = expected_ends(claim.expected)
    return low if math.isinf(high) and low > 0 else None


def published_pairs(claims: list[Claim], hardware: dict[str, Gpu]) -> list[PairCheck]:
    """Every pair of absolute published figures of one source and row on two GPUs, each scaled by the
    rule datasheet against datasheet from the older GPU to the newer."""
    groups: dict[tuple[object, ...], list[Claim]] = {}
    for claim in claims:
        if claim.purpose == REPRODUCTION and claim.kind == ABSOLUTE and claim.scaling is not None:
            groups.setdefault(_key(claim), []).append(claim)
    checks = []
    for group in groups.values():
        ordered = sorted(group, key=lambda c: hardware[c.gpus[0]].generation or 0)
        for i, older in enumerate(ordered):
            for newer in ordered[i + 1 :]:
                old_gpu, new_gpu = hardware[older.gpus[0]], hardware[newer.gpus[0]]
                old_figure, new_figure = _figure(older), _figure(newer)
                if old_gpu.id == new_gpu.id or not old_figure or not new_figure:
                    continue
                try:
                    predicted = scale_factor(older.scaling, old_gpu, {}, new_gpu).value  # type: ignore[arg-type]
                except NoReference:
                    continue
                generations = (
                    None
                    if old_gpu.generation is None or new_gpu.generation is None
                    else new_gpu.generation - old_gpu.generation
                )
                checks.append(PairCheck(older, newer, new_figure / old_figure, predicted, generations))
    return checks
