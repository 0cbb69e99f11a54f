"""What each planned point is measured for: the claims of config/expected that read it, or a figure only.

A point a claim reads starts at three processes and gets more only while the claim stays inconclusive; a
point only a figure shows runs one process (GPU-bound) or two (host-paced): gpurepro/rounds.py counts them.
Which claims read a point is the mapping the rounds of more processes use (points.claim_points, from a
claim's table rows to the raw points behind them), asked before anything is measured: of the tables the
section's points would make, with one row per point for each selection a claim makes of its family's
tables. A peak over B (HFTA's speedups, statistic max) is predicted where the profile expects it (its
fused_best_b, else the largest B a scheme runs at); where a run's peak lands elsewhere, the first round
of more processes tops the points it then reads up to three (plan.next_round).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from .. import rounds
from ..profiles import project_root
from ..registry import RECORDS, STEP_COMPILED, STEP_GRAPHED, STEP_STOCK
from ..verdict.claims import Claim, Selection
from ..verdict.loading import load_claims
from .points import TABLE_COLUMNS, claim_points, selections

# The families whose points run in rounds of processes, and the wildcards that name a point of each,
# besides its run (registry.py)
AXES = {record.family: record.axes for record in RECORDS if record.extra_rounds}
# Each family's tables a claim may read: the study's summary and its across-process table.
TABLES = {
    "deit": ("inference_deit", "inference_deit_processes"),
    "bert": ("inference_bert", "inference_bert_processes"),
    "hfta": ("hfta_processes",),
}
SPEEDUPS = "hfta_speedup"
HFTA_STEPS = (STEP_STOCK, STEP_GRAPHED, STEP_COMPILED)
# The fused array's scheme; the other schemes are its baselines.
FUSED = "hfta"

PointKey = tuple[str, tuple[tuple[str, str], ...]]


def point_key(family: str, point: Mapping[str, Any]) -> PointKey:
    """A planned point as points.Point names it: its family and its wildcards (no run), as text."""
    return family, tuple(sorted((name, str(point[name])) for name in AXES[family]))


def _values(section: Mapping[str, Any], key: str, extra: Iterable[Any] = ()) -> list[Any]:
    return list(dict.fromkeys([*section.get(key, []), *extra]))


def candidates(family: str, section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every point the section may plan for a family (a superset: each wildcard's values, crossed)."""
    if family == "deit":
        extra = section.get("extra_points", [])
        axes = {
            "vit_model": _values(section, "vit_models", (p["model"] for p in extra)),
            "batch": _values(section, "batch_sizes", (p["batch"] for p in extra)),
            "precision": _values(section, "precisions", (p["precision"] for p in extra)),
            "mode": _values(section, "modes", (p["mode"] for p in extra)),
        }
    elif family == "bert":
        pairs = section.get("bert_points", [])
        axes = {
            "bert_model": _values(section, "bert_models", (p["model"] for p in pairs)),
            "seq": _values(section, "bert_seq_lengths", (p["seq"] for p in pairs)),
            "batch": _values(section, "batch_sizes"),
            "precision": _values(section, "precisions"),
            "mode": _values(section, "modes"),
        }
    else:
        axes = {
            "net": _values(section, "workloads"),
            "step": list(HFTA_STEPS),
            "scheme": _values(section, "modes"),
            "precision": _values(section, "precisions"),
            "b": _values(section, "b_values", section.get("serial_b_values", [])),
        }
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


def _row(family: str, point: Mapping[str, Any]) -> dict[str, Any]:
    """A point's columns in its family's tables (points.TABLE_COLUMNS, read the other way)."""
    row = {TABLE_COLUMNS[name]: point[name] for name in AXES[family]}
    return row | ({} if family == "hfta" else {"family": family})


def _selected(selection: Selection, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as the selection reads them: its metric and statistic, and each column it filters on that no
    point names (status, per_process, ...) as it asks."""
    wanted = {"metric": selection.metric, "statistic": selection.statistic, **selection.where}
    return pd.DataFrame([{**wanted, **row} for row in rows])


def peak_b(section: Mapping[str, Any], scheme: str) -> int:
    """The B a scheme's curve is expected to peak at: the profile's fused_best_b where the scheme runs at
    it, else the largest B it runs at (serial at serial_b_values, by default the smallest B)."""
    b_values = [int(b) for b in section.get("b_values", [])]
    if scheme == "serial":
        b_values = [int(b) for b in section.get("serial_b_values", [min(b_values)])]
    best = section.get("fused_best_b")
    return int(best) if best is not None and int(best) in b_values else max(b_values)


def _speedup_rows(section: Mapping[str, Any], points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The speedup rows the points would make with each curve at its expected peak: the fused array at
    each step against every baseline at each step, per workload and precision."""
    peaks = [p for p in points if int(p["b"]) == peak_b(section, str(p["scheme"]))]
    fused = [p for p in peaks if p["scheme"] == FUSED]
    baselines = [p for p in peaks if p["scheme"] != FUSED]
    return [
        {
            "workload": f["net"],
            "precision": f["precision"],
            "step": f["step"],
            "b": f["b"],
            "mode": FUSED,
            "baseline": b["scheme"],
            "baseline_step": b["step"],
            "baseline_b": b["b"],
        }  # fmt: skip
        for f, b in itertools.product(fused, baselines)
        if (f["net"], f["precision"]) == (b["net"], b["precision"])
    ]


def planned_tables(claim: Claim, family: str, section: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """The tables of a family a claim's selections read, as the section's points would make them."""
    points = candidates(family, section)
    tables: dict[str, pd.DataFrame] = {}
    for selection in selections(claim):
        if selection.table in TABLES[family]:
            tables[selection.table] = _selected(selection, [_row(family, p) for p in points])
        elif family == "hfta" and selection.table == SPEEDUPS:
            tables[SPEEDUPS] = _selected(selection, _speedup_rows(section, points))
    return tables


@functools.cache
def project_claims() -> tuple[Claim, ...]:
    """The claims of config/expected (the verdict's)."""
    return tuple(load_claims([project_root() / "config" / "expected"]))


def read_points(
    family: str, section: Mapping[str, Any], claims: Iterable[Claim] | None = None
) -> dict[PointKey, tuple[str, ...]]:
    """Each point of the family that a claim reads, with the claims (ids) that read it."""
    read: dict[PointKey, list[str]] = {}
    for claim in project_claims() if claims is None else claims:
        if claim.needs_setup is not None:  # no run sets it up: nothing of it is measured
            continue
        tables = planned_tables(claim, family, section)
        for point in claim_points(claim, tables) if tables else []:
            if point.study == family:
                read.setdefault(point.key, []).append(claim.id)
    return {key: tuple(ids) for key, ids in read.items()}


@functools.cache
def _read_points_of(family: str, section_json: str) -> dict[PointKey, tuple[str, ...]]:
    return read_points(family, json.loads(section_json))


def claims_reading(family: str, section: Mapping[str, Any], point: Mapping[str, Any]) -> tuple[str, ...]:
    """The claims (ids) of config/expected that read a planned point of a family; none: a figure only."""
    found = _read_points_of(family, json.dumps(section, sort_keys=True, default=str))
    return found.get(point_key(family, point), ())


def counter(family: str, section: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], int]:
    """How many processes each point of a family runs in, by what it is for (rounds.py): the rule files'
    count of a point's processes."""
    count = rounds.hfta_repeats if family == "hfta" else rounds.inference_repeats

    def processes(point: Mapping[str, Any]) -> int:
        return count(section, point, bool(claims_reading(family, section, point)))

    return processes
