"""Which raw points of a study a claim reads, and how many processes each has: a claim names table rows
(its measure, subtract, divide_by and order selections), a row names the point(s) whose processes made
it. Only the studies measured in processes (inference, HFTA) have points to add processes to."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..looks import family_of
from ..verdict.claims import Claim, Selection
from ..verdict.reading import selected_rows


@dataclass(frozen=True)
class Point:
    """One raw point of a study, as the workflow names it (its wildcards without the run), with the runs
    that measured it and their figure (for the noisier side first)."""

    study: str  # the family of points: hfta, deit or bert
    wildcards: tuple[tuple[str, str], ...]
    runs: tuple[int, ...]
    gsd: float  # geometric SD of the point's figure over its processes (NaN with fewer than two)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        return self.study, self.wildcards

    def next_run(self) -> dict[str, str | int]:
        """The point's wildcards with the run its next process takes."""
        return {**dict(self.wildcards), "run": max(self.runs, default=0) + 1}


def selections(claim: Claim, order: Sequence[int] | None = None) -> list[Selection]:
    """Every selection a claim reads: its measure, what it subtracts or divides by, each ordered point;
    where `order` names positions, only the ordered points there (an ordering's measure alone selects
    every one of its points)."""
    if order is not None:
        return [claim.measure.with_where(claim.order[i]) for i in order]
    chosen = [claim.measure, *(s for s in (claim.subtract, claim.divide_by) if s is not None)]
    return chosen + [claim.measure.with_where(point) for point in claim.order]


def _hfta_wildcards(row: pd.Series) -> list[dict[str, str]]:
    """A throughput row names its point; a speedup row the fused point and its baseline's, each at its B."""
    common = {"net": str(row["workload"]), "precision": str(row["precision"])}
    if "baseline" in row and isinstance(row.get("baseline"), str) and row["baseline"]:
        return [
            {**common, "step": str(row["step"]), "scheme": "hfta", "b": str(int(row["b"]))},
            {
                **common, "step": str(row["baseline_step"]), "scheme": str(row["baseline"]),
                "b": str(int(row["baseline_b"])),
            },
        ]  # fmt: skip
    return [{**common, "step": str(row["step"]), "scheme": str(row["mode"]), "b": str(int(row["b"]))}]


def _inference_wildcards(row: pd.Series) -> list[dict[str, str]]:
    common = {"batch": str(int(row["batch_size"])), "precision": str(row["precision"])}
    common["mode"] = str(row["mode"])
    if row["family"] == "deit":
        return [{"vit_model": str(row["model"]), **common}]
    return [{"bert_model": str(row["model"]), "seq": str(int(row["seq_len"])), **common}]


# The study table each point's processes are read from, and the metric that stands for its noise.
_PROCESS_TABLES = {"hfta": ("hfta_processes", "throughput"), "deit": ("inference_deit_processes", None),
                   "bert": ("inference_bert_processes", None)}  # fmt: skip
TABLE_COLUMNS = {"net": "workload", "scheme": "mode", "b": "b", "step": "step", "precision": "precision",
                  "vit_model": "model", "bert_model": "model", "seq": "seq_len", "batch": "batch_size",
                  "mode": "mode"}  # fmt: skip


def _processes(
    family: str, wildcards: dict[str, str], selection: Selection, tables: dict[str, pd.DataFrame]
) -> tuple[tuple[int, ...], float]:
    """The runs that measured a point and the geometric SD over them of the figure the claim reads (its
    metric and, in an inference table, its per-process statistic: a process's power at its point's
    median pace spreads far less than its power at its own pace), from the study's across-process table
    (none yet: no runs, NaN)."""
    name, own_metric = _PROCESS_TABLES[family]
    table = tables.get(name)
    if table is None or table.empty:
        return (), math.nan
    rows = table[table["metric"] == (own_metric or selection.metric)]
    per_process = selection.where.get("per_process")
    if own_metric is None and per_process is not None and "per_process" in rows:
        rows = rows[rows["per_process"].astype(str) == str(per_process)]
    for wildcard, value in wildcards.items():
        column = TABLE_COLUMNS[wildcard]
        if column in rows:
            rows = rows[rows[column].astype(str).str.replace(r"\.0$", "", regex=True) == value]
    counted = rows[rows["statistic"] == "processes"]
    if counted.empty:
        return (), math.nan
    runs = tuple(int(float(r)) for r in str(counted["runs"].iloc[0]).split(",") if r.strip())
    gsd = rows.loc[rows["statistic"] == "gsd", "value"]
    return runs, float(gsd.iloc[0]) if len(gsd) else math.nan


def claim_points(
    claim: Claim, tables: dict[str, pd.DataFrame], order: Sequence[int] | None = None
) -> list[Point]:
    """The raw points behind every row the claim reads, each once, with its runs and noise; of an
    ordering, only the points at the positions `order` names, where given (its unresolved steps')."""
    points: dict[tuple, Point] = {}
    for selection in selections(claim, order):
        family = family_of(selection.table)
        table = tables.get(selection.table)
        if family is None or table is None:
            continue
        rows = selected_rows(selection, table)
        to_wildcards = _hfta_wildcards if family == "hfta" else _inference_wildcards
        for _, row in rows.iterrows():
            point_family = family if family == "hfta" else str(row["family"])
            for wildcards in to_wildcards(row):
                runs, gsd = _processes(point_family, wildcards, selection, tables)
                point = Point(point_family, tuple(sorted(wildcards.items())), runs, gsd)
                points.setdefault(point.key, point)
    return list(points.values())
