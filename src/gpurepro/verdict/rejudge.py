"""A run's tables judged by this checkout's claims, hardware table and points, as `gpurepro verdict`
judges them in the workflow. Comparing two runs' verdicts as each was drawn when it ran would set one
version of the claims against another: a headline that moved because a claim's protocol was revised
would read as a change in the measurements. Judged again by one set of claims, a changed word is news
about the runs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..compare.verdicts import CLAIM_COLUMNS, Judged
from ..hardware import load_hardware
from ..profiles import project_root
from . import render, sides
from .claims import load_claims
from .evaluate import evaluate
from .outcome import Outcome
from .points import load_points
from .summary import paper_verdicts


def judge_run(folder: Path) -> list[Outcome]:
    """Every claim of this checkout judged on the tables of a results folder of one device
    (<folder>/tables/*.csv), with where its sides ran from the folder's provenance sidecars."""
    config = project_root() / "config"
    hardware = load_hardware(config / "hardware")
    claims = load_claims([config / "expected"], None, hardware, load_points(config / "points.yaml"))
    tables = {path.stem: pd.read_csv(path) for path in sorted((folder / "tables").glob("*.csv"))}
    return sides.described(evaluate(claims, tables, hardware), tables, folder)


def judged(folder: Path) -> Judged:
    """A results folder judged again, as `gpurepro compare` sets two runs side by side."""
    outcomes = judge_run(folder)
    claims = render.frame(outcomes).astype(str).reindex(columns=CLAIM_COLUMNS, fill_value="")
    return Judged(papers_of(outcomes), claims)


def papers_of(outcomes: list[Outcome]) -> dict[str, str]:
    """Paper -> its headline, in the order the verdict prints them."""
    return {paper.paper: paper.headline for paper in paper_verdicts(outcomes)}
