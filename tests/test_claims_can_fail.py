"""Every shipped claim and regression check can fail on what a run measures: for each, a made table on
the paper's GPU where it reads "not held"; the few that no run of this pipeline can fail read "not
testable here" or "not measured", each with why (a cluster's tail, a cluster's average, MIG). The
claims about a cluster's GPUs fail on a campaign's made table instead, with the GPUs they need."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from gpurepro.hardware import load_hardware
from gpurepro.verdict.campaign import on_campaign
from gpurepro.verdict.claims import Claim, Selection
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.points import load_points
from gpurepro.verdict.statuses import GRADE_OF, NOT_HELD, NOT_MEASURED, NOT_TESTABLE

from .conftest import ROOT
from .test_verdict import SCHEMA

HARDWARE = load_hardware(ROOT / "config" / "hardware")
CLAIMS = {c.id: c for c in load_claims([ROOT / "config" / "expected"], SCHEMA, HARDWARE, load_points())}
# A name NVML gives each paper GPU (checked against its hardware entry below).
NVML_NAME = {
    "a100-sxm4-40gb": "NVIDIA A100-SXM4-40GB",
    "a100-sxm4-80gb": "NVIDIA A100-SXM4-80GB",
    "h100-sxm": "NVIDIA H100 80GB HBM3",
    "h200": "NVIDIA H200",
    "quadro-rtx6000": "Quadro RTX 6000",
    "v100-sxm2": "Tesla V100-SXM2-16GB",
}
# The claims no run of this pipeline can fail, and the words of why.
CANNOT_FAIL = {
    "sc22-outliers-vs-median-gpu": (NOT_TESTABLE, "needs 300 GPUs of one model"),
    "sc22-average-variation": (NOT_MEASURED, "needs a cluster's worth of GPUs"),
    "hfta-speedup-over-mig": (NOT_MEASURED, "needs MIG partitions"),
    # a few watts +-5 W (whole-watt 1 s samples) admits 2-12 W: not testable even on the artifact's A100
    "deit-t-a100-power-above-idle": (NOT_TESTABLE, "is 6x as wide as the paper's figure"),
    "deit-s-a100-power-above-idle": (NOT_TESTABLE, "is 2.7x as wide as the paper's figure"),
}
SWEEP = (8192, 16384, 25536)


def _concrete(value: Any) -> Any:
    """A value a pattern filter matches ("gpu *" -> "gpu 0")."""
    return value.replace("*", "0") if isinstance(value, str) else value


def _rows(selection: Selection, value: float, unit: str, gpu: str, spread: float = 0.001) -> list[dict]:
    """One point's row, with its interval's rows (a tight one) where the selection names them."""
    keys = {"gpu_name": gpu, "gpu_uuid": "GPU-0", **{k: _concrete(v) for k, v in selection.where.items()}}
    rows = [
        {**keys, "metric": selection.metric, "statistic": selection.statistic, "value": value, "unit": unit}
    ]
    if selection.interval:
        half = spread * abs(value) + 1e-9
        for statistic, end in zip(selection.interval, (value - half, value + half), strict=True):
            rows.append(
                {**keys, "metric": selection.metric, "statistic": statistic, "value": end, "unit": unit}
            )
    return rows


def _failing_value(claim: Claim) -> float:
    """A value the claim's direction or magnitude rejects on the paper's GPU."""
    direction = claim.direction
    if direction is not None and direction.test is None:
        threshold = direction.threshold
        if direction.above is not None:
            return threshold / 2 if threshold > 0 else threshold - 10
        return threshold * 2 if threshold > 0 else threshold + 10
    low, high = claim.accepted_range()
    return high * 3 if math.isfinite(high) else (low / 3 if low > 0 else low - 10)


def failing_tables(claim: Claim, gpu: str) -> dict[str, pd.DataFrame]:
    """Tables on which `claim` should read not held (each shipped claim reads one table)."""
    rows: list[dict] = []
    measure = claim.measure
    if claim.order:  # each point below the one before, far beyond its interval
        for index, point in enumerate(claim.order):
            rows += _rows(measure.with_where(point), 100.0 - 10 * index, claim.unit, gpu)
    elif claim.divide_by or claim.subtract:
        other = claim.divide_by or claim.subtract
        target = _failing_value(claim)
        first = target * 10 if claim.divide_by else target + 10
        rows += _rows(measure, first, "u", gpu) + _rows(other, 10.0, "u", gpu)  # type: ignore[arg-type]
    else:
        rows += _rows(measure, _failing_value(claim), claim.unit, gpu)
    if claim.direction is not None and claim.direction.test is not None:  # GPUs alike within their noise
        rows += _rows(
            Selection(measure.table, measure.metric, claim.direction.test.statistic, measure.where),
            0.9,
            "1",
            gpu,
        )
    if claim.needs_sweep is not None:  # the other sizes of the sweep, at the best rate
        column = claim.needs_sweep.column
        for size in SWEEP:
            if size != measure.where.get(column):
                rows += _rows(measure.with_where({column: size}), 1.0, claim.unit, gpu)
    tables: dict[str, list[dict]] = {}
    for row in rows:
        table = claim.measure.table if "table" not in row else row.pop("table")
        tables.setdefault(table, []).append(row)
    return {name: pd.DataFrame(table_rows) for name, table_rows in tables.items()}


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_every_claim_fails_on_some_made_table(claim_id: str) -> None:
    claim = CLAIMS[claim_id]
    gpu = NVML_NAME[claim.gpus[0]]
    assert HARDWARE[claim.gpus[0]].matches(gpu)
    tables = failing_tables(claim, gpu)
    (outcome,) = evaluate([claim], tables, HARDWARE, gpu_count=max(claim.needs_gpus, 1))
    if claim_id in CANNOT_FAIL:
        result, why = CANNOT_FAIL[claim_id]
        assert outcome.result == result and why in outcome.detail, outcome.detail
        return
    # a claim shown but not counted (an order by the models' sizes) still reads the failing result
    failed = GRADE_OF[outcome.result] if claim.not_counted else outcome.grade
    assert failed == NOT_HELD, f"{outcome.status}: {outcome.detail}"
    if claim.not_counted:
        assert "(shown, not counted)" in outcome.status


ON_CAMPAIGN = {claim.id: claim for claim in on_campaign(list(CLAIMS.values())) if claim.campaign}


@pytest.mark.parametrize("claim_id", sorted(ON_CAMPAIGN))
def test_every_campaign_reading_fails_on_some_made_campaign_table(claim_id: str) -> None:
    """Each claim a campaign judges reads "not held" on a made campaign table with the GPUs it needs
    (fewer: not testable here, saying how many it has and needs)."""
    claim = ON_CAMPAIGN[claim_id]
    gpu = NVML_NAME[claim.gpus[0]]
    tables = failing_tables(claim, gpu)
    needed = claim.needs_population.gpus if claim.needs_population else 2
    (outcome,) = evaluate([claim], tables, HARDWARE, gpu_count=needed)
    assert outcome.grade == NOT_HELD, f"{outcome.status}: {outcome.detail}"
    if claim.needs_population:
        (fewer,) = evaluate([claim], tables, HARDWARE, gpu_count=needed - 1)
        assert fewer.result == NOT_TESTABLE
        assert f"needs {needed} GPUs of one model, {needed - 1} here" in fewer.detail
