"""A run's tables judged by this checkout's claims, hardware table and points, as `gpurepro verdict`
judges them in the workflow. Comparing two runs' verdicts as each was drawn when it ran would set one
version of the claims against another: a headline that moved because a claim's protocol was revised
would read as a change in the measurements. Judged again by one set of claims, a changed word is news
about the runs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..compare.verdicts import CLAIM_COLUMNS, Judged
from ..hardware import Gpu, load_hardware
from ..looks import run_looks
from ..profiles import project_root
from . import render, sides
from .claims import Claim
from .evaluate import evaluate
from .loading import load_claims
from .measured import how_measured
from .outcome import Outcome
from .points import load_points
from .summary import paper_verdicts


def judge_tables(
    claims: list[Claim],
    tables: dict[str, pd.DataFrame],
    hardware: dict[str, Gpu],
    results: Path | None,
    gpus: int | None = None,
    plots: dict[str, str] | None = None,
    rules: dict[str, str] | None = None,
) -> list[Outcome]:
    """The claims judged on a run's tables, with the plan its provenance records under `results` (the
    device's folder: a quick plan's untested sizes read "not measured (quick plan)") and where each
    claim's sides ran, each family of points at its last look (looks.py): what `gpurepro verdict` draws
    and what a comparison judges again."""
    plan = how_measured(results).plan
    outcomes = evaluate(claims, tables, hardware, gpus, plots, rules, plan, run_looks(results))
    return sides.described(outcomes, tables, results)


def judge_run(folder: Path) -> list[Outcome]:
    """Every claim of this checkout judged on the tables of a results folder of one device
    (<folder>/tables/*.csv)."""
    config = project_root() / "config"
    hardware = load_hardware(config / "hardware")
    claims = load_claims([config / "expected"], None, hardware, load_points(config / "points.yaml"))
    tables = {path.stem: pd.read_csv(path) for path in sorted((folder / "tables").glob("*.csv"))}
    return judge_tables(claims, tables, hardware, folder)


def judged(folder: Path) -> Judged:
    """A results folder judged again, as `gpurepro compare` sets two runs side by side."""
    outcomes = judge_run(folder)
    claims = render.frame(outcomes).astype(str).reindex(columns=CLAIM_COLUMNS, fill_value="")
    return Judged(papers_of(outcomes), claims)


def papers_of(outcomes: list[Outcome]) -> dict[str, str]:
    """Paper -> its headline, in the order the verdict prints them."""
    return {paper.paper: paper.headline for paper in paper_verdicts(outcomes)}
