"""Scaling an absolute claim from the paper's GPU to the one a run measured: the product over the claim's
reference rates of (rate measured here / the paper GPU's rate from the hardware table) ^ exponent."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..reference import REFERENCES
from .claims import Scaling
from .hardware import Gpu


class NoReference(Exception):
    """A rate the scaling needs was not measured in this run."""


@dataclass(frozen=True)
class Factor:
    value: float
    how: str  # each rate's two sides, for the verdict's detail
    rates: tuple[str, ...] = ()  # the measured rates that entered it (none: not scaled by the GPU)


def measured_references(tables: dict[str, pd.DataFrame]) -> dict[str, float]:
    """This run's reference rates (tables/reference.csv: the median over reps, over GPUs if several)."""
    table = tables.get("reference")
    if table is None or table.empty:
        return {}
    medians = table[table["statistic"] == "median"]
    values = pd.to_numeric(medians["value"], errors="coerce")
    return {
        str(name): float(group.median())
        for name, group in values.groupby(medians["metric"])
        if group.notna().any()
    }


def scale_factor(scaling: Scaling, paper_gpu: Gpu, here: dict[str, float]) -> Factor:
    """The factor taking the paper's figure to this GPU, and how each rate entered it. With no reference
    rate (a workload bound by the host, not the GPU) the factor is 1."""
    missing = [reference for reference in scaling.exponents if reference not in here]
    if missing:
        raise NoReference(
            f"rate absent: this run measured no {', '.join(missing)} reference rate (tables/reference.csv, "
            f"`snakemake reference` makes it), which the scaling from {paper_gpu.name} needs"
        )
    factor, parts = 1.0, []
    for reference, exponent in scaling.exponents.items():
        unit = REFERENCES[reference]
        theirs = paper_gpu.rates[reference]
        factor *= (here[reference] / theirs.value) ** exponent
        power = "" if exponent == 1 else f"^{exponent:g}"
        ours = f"{reference} {here[reference]:.4g} {unit} here"
        parts.append(f"({ours} / {theirs.describe(unit)} on {paper_gpu.name}){power}")
    how = " x ".join(parts) if parts else f"not scaled by a GPU rate ({scaling.why})"
    if not math.isfinite(factor) or factor <= 0:
        raise NoReference(f"the scaling from {paper_gpu.name} gave no usable factor ({how})")
    return Factor(factor, how, tuple(scaling.exponents))
