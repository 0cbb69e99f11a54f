"""Scaling an absolute claim from the paper's GPU to the one a run measured: the product over the claim's
reference rates of (this GPU's rate / the paper GPU's rate) ^ exponent, each rate like for like.

A measured rate sits below its datasheet peak (an H100's FP16 GEMM reaches about 720-740 of its 989.5
TFLOP/s), so a rate measured here against the paper GPU's datasheet pulls every expectation low. Each
rate is therefore taken on one basis on both sides: where the paper's GPU has a measured rate
(config/hardware), against the rate this run measured (tables/reference.csv); otherwise the two
datasheets, this GPU's from the hardware entry its NVML name matches.

Cards of one model differ (1.9% in SGEMM rate across four H100s of one node), so where a placed run
measured the rates on each of its GPUs a claim takes those of the cards its points ran on (rates_for),
and the whole table only where its rows name no GPU or none of the table's."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

import pandas as pd

from ..compare.points import normal, short_uuid
from ..hardware import DATASHEET, MEASURED, Gpu
from ..reference import REFERENCES
from .claims import Scaling

# How a scaling's words name a rate measured in this run where no GPU was chosen for it (one GPU).
HERE = "here"


class NoReference(Exception):
    """A rate the scaling needs is known on no common basis here."""


@dataclass(frozen=True)
class Factor:
    value: float
    how: str  # each rate's two sides, with their basis, for the verdict's detail
    rates: tuple[str, ...] = ()  # the rates that entered it (none: not scaled by the GPU)


@dataclass(frozen=True)
class ReferenceRates:
    """The measured reference rates a claim is scaled by, and which GPUs they are of."""

    rates: dict[str, float]
    gpus: tuple[str, ...] = ()  # the UUIDs of the GPUs whose rates these are (every one on a fallback)
    own: bool = False  # the rates of the GPUs the claim's points ran on
    where: str = HERE  # what the detail says after "measured": "here", "on its GPU GPU-3b892c5d", ...


def measured_references(tables: dict[str, pd.DataFrame]) -> dict[str, float]:
    """This run's reference rates (tables/reference.csv: the median over reps, over GPUs if several)."""
    table = tables.get("reference")
    if table is None or table.empty:
        return {}
    return _median_rates(table[table["statistic"] == "median"])


def _median_rates(medians: pd.DataFrame) -> dict[str, float]:
    """Each reference rate: the median of its rows' medians (one row per GPU)."""
    values = pd.to_numeric(medians["value"], errors="coerce")
    return {
        str(name): float(group.median())
        for name, group in values.groupby(medians["metric"])
        if group.notna().any()
    }


def row_gpus(rows: pd.DataFrame) -> pd.Series:
    """Each row's GPU UUID; '' where the table has none (the CPU, a table older than the column)."""
    if "gpu_uuid" not in rows:
        return pd.Series("", index=rows.index)
    return rows["gpu_uuid"].map(lambda uuid: normal(uuid).strip())


def rates_for(table: pd.DataFrame | None, uuids: Collection[str]) -> ReferenceRates:
    """The reference rates of the GPUs `uuids` (the claim's points' cards): their rows of
    tables/reference.csv, the median over those cards where they are several; else, where `uuids` is
    empty (the rows name no GPU) or no row of the table is theirs (older results), the whole table as
    before rates were measured per GPU, the words saying which was taken and why."""
    if table is None or table.empty:
        return ReferenceRates({})
    medians = table[table["statistic"] == "median"]
    named = row_gpus(medians)
    measured = sorted(set(named) - {""})
    wanted = {uuid for uuid in uuids if uuid}
    theirs = named.isin(wanted)
    if theirs.any():
        gpus = tuple(sorted(set(named[theirs])))
        return ReferenceRates(_median_rates(medians[theirs]), gpus, True, _on_its(gpus, len(measured)))
    return ReferenceRates(_median_rates(medians), tuple(measured), False, _fallback(sorted(wanted), measured))


def _on_its(gpus: tuple[str, ...], measured: int) -> str:
    """Where the rates of the claim's own GPUs were measured, in words; 'here' where the run measured
    them on one GPU only (nothing was chosen: its one GPU's rates, as before rates per GPU)."""
    if measured <= 1:
        return HERE
    if len(gpus) == 1:
        return f"on its GPU {short_uuid(gpus[0])}"
    return f"on its {len(gpus)} GPUs (the median of {', '.join(map(short_uuid, gpus))})"


def _fallback(wanted: list[str], measured: list[str]) -> str:
    """Where the whole table's rates were measured, in words, and why they were taken."""
    if not wanted and len(measured) <= 1:
        return HERE  # one GPU's rates, and no GPU named to hold them against: as before
    why = f"no reference rates of its {_named(wanted)}" if wanted else "its rows name no GPU"
    if len(measured) > 1:
        taken = f"the median of the run's {len(measured)} GPUs"
    else:
        taken = f"{short_uuid(measured[0])}'s" if measured else "the run's rates"
    return f"{HERE} ({taken}: {why})"


def _named(gpus: list[str]) -> str:
    """'GPU GPU-3b892c5d' or 'GPUs GPU-3b892c5d, GPU-cbdd18f1'."""
    return f"GPU{'s' if len(gpus) > 1 else ''} {', '.join(map(short_uuid, gpus))}"


def _sides(
    reference: str, paper_gpu: Gpu, here: dict[str, float], here_gpu: Gpu | None, where: str = HERE
) -> tuple[float, str, float, str]:
    """(rate here, its words, the paper GPU's rate, its words) on one basis; `where`: the GPUs the rates
    here were measured on, in words (ReferenceRates.where)."""
    unit = REFERENCES[reference]
    theirs = paper_gpu.rates[reference]
    if theirs.measured is not None:
        if reference not in here:
            raise NoReference(
                f"rate absent: this run measured no {reference} reference rate (tables/reference.csv, "
                f"`snakemake reference` makes it), which the scaling from {paper_gpu.name}'s measured "
                f"{reference} needs"
            )
        return (
            here[reference],
            f"{here[reference]:.4g} {unit} measured {where}",
            theirs.measured.value,
            (theirs.measured.describe(unit)),
        )
    ours = here_gpu.rates.get(reference) if here_gpu is not None else None
    if ours is None or ours.datasheet is None or theirs.datasheet is None:
        which = here_gpu.name if here_gpu is not None else "this GPU"
        raise NoReference(
            f"no datasheet {reference} of {which} in config/hardware/ (the paper's {paper_gpu.name} has no "
            f"measured {reference}, so the scaling takes datasheet against datasheet, never a rate "
            "measured here against a datasheet peak)"
        )
    return (
        ours.datasheet.value,
        f"{ours.datasheet.value:.4g} {unit} ({DATASHEET}: {here_gpu.name})",  # type: ignore[union-attr]
        theirs.datasheet.value,
        theirs.datasheet.describe(unit),
    )


def scale_factor(
    scaling: Scaling, paper_gpu: Gpu, here: dict[str, float], here_gpu: Gpu | None = None, where: str = HERE
) -> Factor:
    """The factor taking the paper's figure to this GPU, and how each rate entered it, each like for like
    (module docstring); `here`: this run's measured rates (`where`: on which GPUs, in words),
    `here_gpu`: this GPU's hardware entry. With no reference rate (a workload bound by the host, not the
    GPU) the factor is 1. A calibrated scaling (scaling.calibrated, pairs.py) takes its datasheet ratio
    to the calibration's exponent: the rule over-predicts what a workload reaches, one way."""
    measured, datasheet, parts = 1.0, 1.0, []
    for reference, exponent in scaling.exponents.items():
        ours, our_words, theirs, their_words = _sides(reference, paper_gpu, here, here_gpu, where)
        power = "" if exponent == 1 else f"^{exponent:g}"
        basis = MEASURED if paper_gpu.rates[reference].measured is not None else DATASHEET
        if basis == DATASHEET:
            datasheet *= (ours / theirs) ** exponent
        else:
            measured *= (ours / theirs) ** exponent
        parts.append(
            f"({reference}, {basis} against {basis}: {our_words} / {their_words} on {paper_gpu.name}){power}"
        )
    how = " x ".join(parts) if parts else f"not scaled by a GPU rate ({scaling.why})"
    factor = measured * datasheet
    if scaling.calibrated is not None and datasheet != 1.0:
        if math.isnan(scaling.calibrated):
            raise NoReference("the datasheet rule's calibration was not read (loading.load_claims reads it)")
        factor = measured * datasheet**scaling.calibrated
        how = (
            f"({how} = {datasheet:.4g}, the datasheet ratio) ^ {scaling.calibrated:.3f}, the datasheet rule "
            "calibrated on the published pairs and shipped runs (it over-predicts what a workload reaches)"
        )
    if not math.isfinite(factor) or factor <= 0:
        raise NoReference(f"the scaling from {paper_gpu.name} gave no usable factor ({how})")
    return Factor(factor, how, tuple(scaling.exponents))


# GPU generations a datasheet scaling may bridge: the rule was checked on published pairs one generation
# apart (NVIDIA's V100 and A100 figures of one table: 15% over); beyond, it has never been checked.
MAX_DATASHEET_GENERATIONS = 1


def datasheet_bridge(scaling: Scaling, paper_gpu: Gpu, here_gpu: Gpu | None) -> str:
    """Why a scaling from datasheets alone bridges too far to judge by itself ("" where it does not): it
    takes some rate datasheet against datasheet (the paper's GPU has no measured rate of it) across
    more than MAX_DATASHEET_GENERATIONS GPU generations. A scaling through rates measured on both GPUs,
    or between GPUs of unknown generation, is left as it is."""
    datasheet = [ref for ref in scaling.exponents if paper_gpu.rates[ref].measured is None]
    if not datasheet or here_gpu is None or paper_gpu.generation is None or here_gpu.generation is None:
        return ""
    bridged = abs(here_gpu.generation - paper_gpu.generation)
    if bridged <= MAX_DATASHEET_GENERATIONS:
        return ""
    return (
        f"a datasheet scaling from {paper_gpu.name} (compute capability {paper_gpu.compute_capability}) to "
        f"{here_gpu.name} ({here_gpu.compute_capability}) bridges {bridged} GPU generations; the rule was "
        f"checked on published pairs {MAX_DATASHEET_GENERATIONS} generation apart only"
    )
