"""The verdict on a campaign: the claims that are about a cluster's GPUs, judged from the tables of a
cluster measured node by node (campaign/aggregate.py), by the same judge and in the same words as a run's.

A claim with a `campaign` block (claims.OnCampaign) reads its value from the campaign's tables instead of
the run's, needs the GPUs that block names (else "not testable here", with how many the campaign has,
how many it needs, and why), and takes the block's direction where it gives one. Every other claim of
the same papers stays in the page as "not measured", saying that its study's own run judges it, so each
paper's line still counts all its claims ("1 of 3 claims testable here"); papers no campaign reads, and
the project's regression checks, are left out.

Where the verdict prints a campaign figure it says what the figure is (the block's `definition`: SC22's
variation as we read it) and prints the block's other figures beside it (`beside`: ours).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ..campaign import layout
from ..hardware import Gpu
from .claims import REPRODUCTION, Beside, Claim, OnCampaign, Selection
from .evaluate import evaluate
from .measured import HowMeasured, how_measured
from .outcome import Outcome
from .reading import NotMeasured, read
from .statuses import NOT_MEASURED

# Why a claim with no campaign block is not measured on a campaign.
NOT_ON_CAMPAIGN = (
    "its study's own run: a campaign measures one SGEMM size on every GPU of its nodes, and the device's "
    "verdict (verdict.md) judges this claim"
)
PLOT = "campaign"  # plots/campaign.png of the campaign's folder


def judge(
    claims: list[Claim],
    tables: dict[str, pd.DataFrame],
    hardware: dict[str, Gpu],
    plots: dict[str, str] | None = None,
) -> list[Outcome]:
    """The outcome of each claim a campaign judges (on_campaign), on the campaign's tables (by name:
    campaign_summary, campaign_gpus, ...), each campaign figure said what it is (described)."""
    return described(evaluate(on_campaign(claims), tables, hardware, plots=plots), tables)


def on_campaign(claims: list[Claim]) -> list[Claim]:
    """The claims as a campaign judges them: those with a campaign block read from it, the other claims
    of their papers not measured (with why); papers without any campaign block left out."""
    papers = {claim.paper for claim in claims if claim.campaign is not None}
    judged = []
    for claim in claims:
        if claim.purpose != REPRODUCTION or claim.paper not in papers:
            continue
        if claim.campaign is None:
            judged.append(replace(claim, needs_setup=NOT_ON_CAMPAIGN))
        else:
            judged.append(_from_campaign(claim, claim.campaign))
    return judged


def _from_campaign(claim: Claim, on: OnCampaign) -> Claim:
    """The claim with its value, needs and direction from its campaign block; what only a run lacks (a
    setup, a GPU count, a sweep) no longer applies."""
    return replace(
        claim,
        measure=on.measure,
        direction=on.direction or claim.direction,
        needs_population=on.needs or claim.needs_population,
        needs_setup=None,
        needs_gpus=0,
        needs_sweep=None,
        plot=PLOT,
    )


def described(outcomes: list[Outcome], tables: dict[str, pd.DataFrame]) -> list[Outcome]:
    """Each campaign figure's outcome with what the figure is and, beside it, the block's other figures,
    also where the claim was not testable (the figure is shown, not judged)."""
    return [_described(outcome, tables) for outcome in outcomes]


def _described(outcome: Outcome, tables: dict[str, pd.DataFrame]) -> Outcome:
    on = outcome.claim.campaign
    if on is None or outcome.result == NOT_MEASURED:  # nothing to show; its reason stays as it is
        return outcome
    claim = outcome.claim
    parts = []
    if on.definition:
        figure = _figure(claim.measure, claim.study, tables)
        parts.append(f"the figure is {on.definition}" + (f": {figure} here" if figure else ""))
    beside = [_beside(item, claim.measure, claim.study, tables) for item in on.beside]
    if beside:
        parts.append("beside it, " + "; ".join(beside))
    if not parts:
        return outcome
    return replace(outcome, detail=f"{outcome.detail}; {'; '.join(parts)}")


def _figure(selection: Selection, study: str, tables: dict[str, pd.DataFrame]) -> str:
    """The selection's value with its interval, in words; "" where the tables do not have it."""
    try:
        values = read(selection, study, tables)
    except NotMeasured:
        return ""
    text = f"{values.values[0]:.4g}{'' if values.unit == '1' else ' ' + values.unit}"
    if values.intervals and all(math.isfinite(end) for end in values.intervals[0]):
        low, high = values.intervals[0]
        text += f" [{low:.4g}, {high:.4g}]"
    return text


def _beside(item: Beside, measure: Selection, study: str, tables: dict[str, pd.DataFrame]) -> str:
    selection = Selection(measure.table, measure.metric, item.statistic, measure.where)
    selection = replace(selection, interval=item.interval)
    return f"{item.says}: {_figure(selection, study, tables) or 'not in the tables'}"


def provenance(folder: Path) -> HowMeasured:
    """How the campaign was measured, from its raw files' sidecars: read from the device's results folder
    where the campaign lies in it (results/<device>/campaign/<name>, whose resolved configs give the
    plan), else from the folder above the campaign's."""
    folder = folder.resolve()
    sidecars = f"{folder.name}/{layout.RAW}/**/*.provenance.json"
    if folder.parent.name == "campaign":
        return how_measured(folder.parent.parent, f"campaign/{sidecars}", "campaign")
    return how_measured(folder.parent, sidecars, "campaign")


def name_of(folder: Path, tables: dict[str, pd.DataFrame]) -> str:
    """The campaign's name, as its tables write it (else its folder's)."""
    names = tables.get("campaign_summary", pd.DataFrame()).get("campaign", pd.Series(dtype=str)).dropna()
    return str(names.iloc[0]) if len(names) else folder.resolve().name
