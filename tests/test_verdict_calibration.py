"""The datasheet scaling rule calibrated on every figure it can be checked on (verdict/pairs.py): the
published pairs the claim files state and the shipped runs config/hardware/calibration/ names, each
run's figure as its archive measured it; the bias taken out of "expected here" and the residual spread
as the scaling's uncertainty, in place of a symmetric +-30% that carried the bias."""

from __future__ import annotations

import io
import math
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from gpurepro.hardware import load_hardware
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.pairs import calibrate, published_pairs, shipped_calibration, shipped_runs
from gpurepro.verdict.scaling import scale_factor

ROOT = Path(__file__).resolve().parents[1]
A100 = "nvidia-resnet50-a100-80gb-amp-1gpu"


def test_each_shipped_run_is_its_archives_figure() -> None:
    """A calibration run names the figure its archive's table holds, so the calibration cannot drift
    from the runs it cites."""
    calibration = shipped_calibration()
    assert len(calibration.runs) == 3
    for run in calibration.runs:
        with tarfile.open(ROOT / run.archive) as packed:
            (member,) = [m for m in packed.getmembers() if m.name.endswith("tables/ddp.csv")]
            table = pd.read_csv(io.BytesIO(packed.extractfile(member).read()))  # type: ignore[union-attr]
        where = run.claim.measure.where
        rows = table[
            (table["model"] == where["model"])
            & (table["gpus"] == where["gpus"])
            & (table["precision"] == where["precision"])
            & (table["metric"] == run.claim.measure.metric)
            & (table["statistic"] == run.claim.measure.statistic)
        ]
        assert rows["value"].tolist() == [pytest.approx(run.measured, abs=0.1)], run.archive


def test_the_rule_errs_one_way_and_the_calibration_takes_it_out() -> None:
    """Every check reads the rule over (NVIDIA's pairs 15.5% and 19.1%, the H200 runs 16-21%); the
    calibrated rule, fitted without a check, predicts it within its residual spread, which is narrower
    than the +-30% that carried the bias."""
    calibration = shipped_calibration()
    errors = sorted(round(check.error, 3) for check in [*calibration.pairs, *calibration.runs])
    assert errors == [0.155, 0.161, 0.164, 0.191, 0.211]
    assert calibration.units == 3  # the runs of one claim on one GPU model check one ratio
    assert 0.78 < calibration.exponent < 0.86
    assert 0.05 < calibration.uncertainty < 0.15
    assert all(abs(error) < calibration.uncertainty for error in calibration.left_out.values())


def test_a_calibration_of_checks_that_disagree_is_wide() -> None:
    """The residual spread is what the checks leave: two pairs that disagree by 40% widen it past them."""
    calibration = shipped_calibration()
    first, second = calibration.pairs
    disagreeing = [
        first,
        type(second)(second.older, second.newer, second.published * 1.4, second.predicted, 1),
    ]
    wide = calibrate(disagreeing, [])
    assert wide.uncertainty > 1.0


def test_expected_here_is_the_calibrated_figure_inside_the_range_it_prints() -> None:
    hardware = load_hardware()
    claims = load_claims([ROOT / "config" / "expected" / "resnet50_training.yaml"], hardware=hardware)
    (claim,) = [c for c in claims if c.id == A100]
    assert claim.scaling is not None and claim.scaling.calibrated == shipped_calibration().exponent
    factor = scale_factor(claim.scaling, hardware["a100-sxm4-80gb"], {}, hardware["h200"])
    raw = math.sqrt(989.5 / 312 * 4800 / 2039)
    assert factor.value == pytest.approx(raw**claim.scaling.calibrated)
    ddp = pd.DataFrame([
        {"gpu_name": "NVIDIA H200", "model": "resnet50", "gpus": 1, "precision": "fp16", "status": "ok",
         "metric": "throughput", "statistic": "total", "value": 5573.0, "unit": "images/s"}
    ])  # fmt: skip
    (outcome,) = [o for o in evaluate(claims, {"ddp": ddp}, hardware) if o.claim.id == A100]
    low, high = outcome.accepted
    expected = 2470 * factor.value
    assert low < expected < high and math.isinf(high)
    assert outcome.describe_expected().startswith(f"≥ {expected:.0f} images/s")
    assert "±9.8% scaling (the calibrated rule's residual)" in outcome.describe_expected()


def test_only_a_datasheet_scaling_may_be_calibrated() -> None:
    """The pairs found in the claims are the two NVIDIA states; the runs all scale datasheet against
    datasheet."""
    hardware = load_hardware()
    claims = load_claims([ROOT / "config" / "expected"], hardware=hardware, calibrated=False)
    assert len(published_pairs(claims, hardware)) == 2
    for run in shipped_runs(claims, hardware):
        paper = hardware[run.claim.gpus[0]]
        assert all(paper.rates[ref].measured is None for ref in run.claim.scaling.exponents)  # type: ignore[union-attr]
