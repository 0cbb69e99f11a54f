"""The reproduction verdict: claim and hardware files are checked with errors that name the file, claim and
key; an absolute claim is judged exactly on its paper's GPU and scaled through reference rates on any
other, a relative one by its direction apart from its magnitude; a claim that cannot be measured says
why; the per-paper summary comes first and the project's own regression checks stand apart; the CLI
writes Markdown, CSV, HTML and the report's landing page."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from docutils.core import publish_parts

from gpurepro import process_table
from gpurepro.errors import GpureproError
from gpurepro.hardware import load_hardware
from gpurepro.verdict import render, summary
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.here import Here
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.measured import HowMeasured
from gpurepro.verdict.pairs import published_pairs, shipped_calibration, uncalibrated
from gpurepro.verdict.ranges import untestable_reason
from gpurepro.verdict.scaling import MAX_DATASHEET_GENERATIONS, scale_factor
from gpurepro.verdict.statuses import (
    DIRECTION_FAILS,
    DIRECTION_OUTSIDE,
    DIRECTION_UNTESTED,
    DIRECTION_WITHIN,
    HELD,
    HOST_DEPENDENT,
    INFO,
    NOT_COMPARABLE,
    NOT_HELD,
    NOT_MEASURED,
    NOT_RESOLVED,
    NOT_TESTABLE,
    ORDER_FAILS,
    ORDER_HOLDS,
    OUTSIDE,
    PARTLY,
    SHOWN,
    UNMEASURED,
    UNRESOLVED,
    UNTESTABLE,
    WITHIN,
)
from gpurepro.verdict.summary import (
    NOT_REPRODUCED,
    PARTIALLY,
    REPRODUCED,
    TOO_FEW,
    paper_verdicts,
    verdict_of,
)

from .conftest import ROOT, run_gpurepro

SCHEMA = ROOT / "workflow" / "schemas" / "claims.schema.yaml"
H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"  # the inference artifact's GPU

# Two GPUs of a test hardware table: the paper's (a measured FP32 rate) and an old one (datasheet only).
HARDWARE = {
    "h200": {
        "name": "H200",
        "nvml_names": ["NVIDIA H200"],
        "source": {"title": "H200 datasheet"},
        "rates": {"fp32_gemm": {"datasheet": 67, "measured": {"value": 50.0, "source": "a run"}}},
    },
    # this run's GPU in most tests: a datasheet only, so a V100 claim scales datasheet against datasheet
    "h100": {
        "name": "H100 SXM",
        "nvml_names": ["NVIDIA H100 80GB HBM3"],
        "source": {"title": "H100 datasheet"},
        "rates": {"fp32_gemm": {"datasheet": 31.4}},
    },
    "v100": {
        "name": "V100 SXM2",
        "nvml_names": ["(Tesla )?V100-SXM2-(16|32)GB"],
        "source": {"title": "V100 datasheet"},
        "rates": {"fp32_gemm": {"datasheet": 15.7}, "power_limit": {"datasheet": 300}},
    },
}
FP32_SCALING = {"with": {"fp32_gemm": 1}, "uncertainty": 0.1, "why": "the FP32 rate bounds SGEMM"}


def claim(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "h200-rate",
        "claim": "torch SGEMM at N=8192 reaches 50 TFLOP/s",
        "kind": "absolute",
        "study": "sgemm",
        "gpu": "h200",
        "measure": {
            "table": "sgemm",
            "metric": "rate",
            "statistic": "median",
            "where": {"backend": "torch", "n": 8192},
        },
        "expected": {"value": 50.0},
        "tolerance": {"relative": 0.1, "why": "another card"},
        "scaling": FP32_SCALING,
        "unit": "TFLOP/s",
        "plot": "sgemm",
        "source": {"where": "Table 1"},
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def relative_claim(**changes: Any) -> dict[str, Any]:
    spec = claim(
        id="speedup",
        claim="the fused array is 2-4x as fast as serial training",
        kind="relative",
        study="hfta",
        gpu=["v100"],
        measure={"table": "hfta_speedup", "metric": "speedup", "statistic": "max"},
        expected={"min": 2, "max": 4},
        direction={"above": 1},
        unit="x",
        scaling=None,
    )
    return {k: v for k, v in {**spec, **changes}.items() if v is not None}


def write_claims(folder: Path, *claims: dict[str, Any], name: str = "claims.yaml", **top: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump({"source": {"title": "a paper"}, **top, "claims": list(claims)}))
    return path


@pytest.fixture
def hardware_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "hardware"
    folder.mkdir()
    for gpu, entry in HARDWARE.items():
        (folder / f"{gpu}.yaml").write_text(yaml.safe_dump(entry))
    return folder


def sgemm_table(rows: list[tuple[str, int, str, float]], gpu: str = H200) -> pd.DataFrame:
    """Long sgemm rows: (backend, n, metric, value) with the statistic median."""
    units = {"rate": "TFLOP/s", "time": "ms"}
    return pd.DataFrame(
        [
            {
                "gpu_name": gpu,
                "backend": b,
                "n": n,
                "metric": m,
                "statistic": "median",
                "value": v,
                "unit": units[m],
            }
            for b, n, m, v in rows
        ]
    )


def reference_table(gpu: str, **rates: float) -> pd.DataFrame:
    units = {"fp32_gemm": "TFLOP/s", "fp16_gemm": "TFLOP/s", "memory_bandwidth": "GB/s", "power_limit": "W"}
    return pd.DataFrame(
        [
            {"gpu_name": gpu, "metric": name, "statistic": "median", "value": value, "unit": units[name]}
            for name, value in rates.items()
        ]
    )


def speedup_table(values: list[float], gpu: str = H100) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"gpu_name": gpu, "metric": "speedup", "statistic": "max", "value": v, "unit": "x", "workload": w}
            for w, v in zip(["resnet18", "mlp", "transformer"], values, strict=False)
        ]
    )


def outcome_of(
    spec: dict[str, Any], tables: dict[str, pd.DataFrame], hardware_dir: Path, gpus: int | None = None
):
    folder = hardware_dir.parent / "expected"
    hardware = load_hardware(hardware_dir)
    (result,) = evaluate(load_claims([write_claims(folder, spec)], SCHEMA, hardware), tables, hardware, gpus)
    return result


def test_the_shipped_claim_and_hardware_files_load() -> None:
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = load_claims([ROOT / "config" / "expected"], SCHEMA, hardware)
    ids = {c.id for c in claims}
    assert {"seed-v100-cublas-time-per-gpu", "h200-cublas-rate-n8192", "hfta-speedup-over-serial"} <= ids
    assert {"deit-b-a100-latency-bs1-amp", "nvidia-resnet50-a100-80gb-amp-1gpu"} <= ids
    assert all(c.source.get("title") and (c.tolerance.why or c.order) for c in claims)
    assert all(c.scaling or c.off_paper_gpu for c in claims if c.kind == "absolute")
    papers = {c.paper for c in claims if c.purpose == "reproduction"}
    assert len(papers) == 5 and all(
        c.paper == "gpurepro reference runs" for c in claims if c.purpose == "regression"
    )


@pytest.mark.parametrize(
    ("value", "status"),
    [(50.0, WITHIN), (45.5, WITHIN), (55.0, WITHIN), (45.4, OUTSIDE), (55.1, OUTSIDE)],
)
def test_on_the_papers_gpu_an_absolute_claim_is_judged_exactly(
    hardware_dir: Path, value: float, status: str
) -> None:
    result = outcome_of(claim(), {"sgemm": sgemm_table([("torch", 8192, "rate", value)])}, hardware_dir)
    assert result.status == status and result.judged == "exact" and result.factor is None
    assert result.measured == pytest.approx(value)
    # +-10% as a factor: 50 / 1.1 to 50 x 1.1
    assert "accepted 45.45 to 55 TFLOP/s" in result.detail
    assert result.describe_basis() == "measured on NVIDIA H200; paper: H200"


@pytest.mark.parametrize(
    ("value", "result"), [(25.0, WITHIN), (22.0, WITHIN), (28.5, WITHIN), (28.6, OUTSIDE), (21.8, OUTSIDE)]
)
def test_on_another_gpu_an_absolute_claim_is_scaled_by_reference_rates(
    hardware_dir: Path, value: float, result: str
) -> None:
    """Here the FP32 rate is half the H200's measured 50: 50 TFLOP/s scales to 25, and the tolerance
    (10%) and the scaling's uncertainty (10%) combine in quadrature (14.1%): 25 / 1.141 to 25 x 1.141."""
    tables = {
        "sgemm": sgemm_table([("torch", 8192, "rate", value)], gpu=H100),
        "reference": reference_table(H100, fp32_gemm=25.0),
    }
    outcome = outcome_of(claim(), tables, hardware_dir)
    assert outcome.result == result and outcome.status == f"scaled from H200: {result}"
    r = math.hypot(0.1, 0.1)
    assert outcome.factor == pytest.approx(0.5) and outcome.accepted == pytest.approx(
        (25 / (1 + r), 25 * (1 + r))
    )
    assert outcome.describe_expected() == "25 TFLOP/s (±10% and ±10% scaling); accepted 21.9 to 28.54 TFLOP/s"
    assert (
        "(fp32_gemm, measured against measured: 25 TFLOP/s measured here / 50 TFLOP/s (measured: a run) "
        "on H200)" in outcome.detail
    )


def test_a_claim_is_scaled_by_the_reference_rates_of_the_gpu_its_points_ran_on(hardware_dir: Path) -> None:
    """A placed run measured the rates on each GPU (two H100s: 40 and 20 TFLOP/s FP32): the SGEMM point
    ran on B, so it scales by B's 20 (factor 0.4), not by the median of both (0.6); rows that name no GPU
    take the whole table, as before rates per GPU, and the detail says which."""
    a, b = "GPU-aaaaaaaa-0000", "GPU-bbbbbbbb-0000"
    reference = pd.concat(
        [
            reference_table(H100, fp32_gemm=40.0).assign(gpu_uuid=a),
            reference_table(H100, fp32_gemm=20.0).assign(gpu_uuid=b),
        ]
    )
    on_b = sgemm_table([("torch", 8192, "rate", 20.0)], gpu=H100).assign(gpu_uuid=b)
    outcome = outcome_of(claim(), {"sgemm": on_b, "reference": reference}, hardware_dir)
    assert outcome.factor == pytest.approx(0.4) and outcome.result == WITHIN
    assert (
        "20 TFLOP/s measured on its GPU GPU-bbbbbbbb / 50 TFLOP/s (measured: a run) on H200" in outcome.detail
    )

    unnamed = on_b.drop(columns=["gpu_uuid"])
    outcome = outcome_of(claim(), {"sgemm": unnamed, "reference": reference}, hardware_dir)
    assert outcome.factor == pytest.approx(0.6)
    assert "30 TFLOP/s measured here (the median of the run's 2 GPUs: its rows name no GPU)" in outcome.detail


def test_a_time_scales_inversely_and_a_range_scales_at_both_ends(hardware_dir: Path) -> None:
    """A V100 time (datasheet 15.7 TFLOP/s) on a GPU whose datasheet says 31.4 TFLOP/s: expected half as
    long, datasheet against datasheet (the V100 has no measured rate; the 20 measured here never enters)."""
    spec = claim(
        gpu="v100",
        measure={
            "table": "sgemm",
            "metric": "time",
            "statistic": "median",
            "where": {"n": 25536},
            "reduce": "each",
        },
        expected={"min": 2262, "max": 2326},
        tolerance={"relative": 0.05, "why": "another node"},
        scaling={"with": {"fp32_gemm": -1}, "uncertainty": 0.15, "why": "FP32-bound"},
        unit="ms",
    )
    tables = {
        "sgemm": sgemm_table(
            [("cublas", 25536, "time", 1000.0), ("cublas", 25536, "time", 1200.0)], gpu=H100
        ),
        "reference": reference_table(H100, fp32_gemm=20.0),
    }
    outcome = outcome_of(spec, tables, hardware_dir)
    assert outcome.factor == pytest.approx(0.5) and outcome.result == WITHIN
    assert "(fp32_gemm, datasheet against datasheet: 31.4 TFLOP/s (datasheet: H100 SXM)" in outcome.detail
    r = math.hypot(0.05, 0.15)
    assert outcome.accepted == pytest.approx((1131 / (1 + r), 1163 * (1 + r)))
    assert outcome.describe_measured() == "1000–1200 ms (2 values)"
    assert outcome.describe_expected() == "1131–1163 ms (±5% and ±15% scaling); accepted 976.6 to 1347 ms"
    tables["sgemm"] = sgemm_table(
        [("cublas", 25536, "time", 1000.0), ("cublas", 25536, "time", 1500.0)], gpu=H100
    )
    outcome = outcome_of(spec, tables, hardware_dir)
    assert outcome.result == OUTSIDE and outcome.measured == 1500.0


def test_a_scaling_by_no_gpu_rate_keeps_the_figure_and_adds_its_uncertainty(hardware_dir: Path) -> None:
    spec = claim(
        gpu="v100",
        scaling={"with": {}, "uncertainty": 0.3, "why": "bound by the host"},
        expected={"value": 4.0},
        tolerance={"relative": 0.1, "why": "x"},
    )
    outcome = outcome_of(spec, {"sgemm": sgemm_table([("torch", 8192, "rate", 5.0)], gpu=H100)}, hardware_dir)
    # no measured rate entered it: never called "scaled"
    assert outcome.status == "from V100 SXM2, unscaled: consistent" and outcome.factor is None
    r = math.hypot(0.1, 0.3)
    assert outcome.accepted == pytest.approx((4 / (1 + r), 4 * (1 + r)))
    assert "not scaled by a GPU rate (bound by the host)" in outcome.detail


def test_a_scaled_claim_without_its_reference_rate_is_not_measured(hardware_dir: Path) -> None:
    tables = {"sgemm": sgemm_table([("torch", 8192, "rate", 25.0)], gpu=H100)}
    outcome = outcome_of(claim(), tables, hardware_dir)
    assert outcome.status == NOT_MEASURED and "measured no fp32_gemm reference rate" in outcome.detail


@pytest.mark.parametrize(
    ("values", "result"),
    [([3.0, 2.5], DIRECTION_WITHIN), ([1.5, 3.0], DIRECTION_OUTSIDE), ([0.9, 3.0], DIRECTION_FAILS)],
)
def test_a_relative_claim_is_judged_on_any_gpu_by_direction_and_magnitude(
    hardware_dir: Path, values: list[float], result: str
) -> None:
    spec = relative_claim(measure={**relative_claim()["measure"], "reduce": "each"})
    outcome = outcome_of(spec, {"hfta_speedup": speedup_table(values)}, hardware_dir)
    assert outcome.status == result and outcome.judged == "relative" and outcome.factor is None
    assert outcome.describe_basis() == "measured on NVIDIA H100 80GB HBM3; paper: V100 SXM2"
    assert (
        "direction > 1 holds" if result != DIRECTION_FAILS else "direction > 1 does not hold"
    ) in outcome.detail
    assert (
        outcome.grade
        == {DIRECTION_WITHIN: HELD, DIRECTION_OUTSIDE: PARTLY, DIRECTION_FAILS: NOT_HELD}[result]
    )


def test_a_direction_below_a_threshold(hardware_dir: Path) -> None:
    spec = relative_claim(direction={"below": 1}, expected={"value": 0.92})
    assert outcome_of(spec, {"hfta_speedup": speedup_table([0.93])}, hardware_dir).status == DIRECTION_WITHIN
    assert outcome_of(spec, {"hfta_speedup": speedup_table([1.08])}, hardware_dir).status == DIRECTION_FAILS
    # within 5% of the threshold and no interval over repeats: not read either way
    unresolved = outcome_of(spec, {"hfta_speedup": speedup_table([1.01])}, hardware_dir)
    assert unresolved.result == NOT_RESOLVED and unresolved.grade == UNRESOLVED


def test_a_ratio_of_two_selections(hardware_dir: Path) -> None:
    spec = relative_claim(
        measure={
            "table": "sgemm",
            "metric": "rate",
            "statistic": "median",
            "where": {"backend": "tiled", "n": 8192},
        },
        divide_by={"where": {"backend": "cublas"}},
        expected={"value": 0.921},
        tolerance={"relative": 0.05, "why": "same card"},
        direction={"below": 1},
    )
    rows = [("tiled", 8192, "rate", 47.09), ("cublas", 8192, "rate", 51.16), ("cublas", 4096, "rate", 40.0)]
    result = outcome_of(spec, {"sgemm": sgemm_table(rows)}, hardware_dir)
    assert result.status == DIRECTION_WITHIN and result.measured == pytest.approx(47.09 / 51.16)


def test_absolute_tolerance_and_one_sided_bound(hardware_dir: Path) -> None:
    spread = claim(expected={"max": 22}, tolerance={"absolute": 0, "why": "worst case"}, unit="ms")
    spread["measure"]["metric"] = "time"
    table = {"sgemm": sgemm_table([("torch", 8192, "time", 21.9)])}
    assert outcome_of(spread, table, hardware_dir).status == WITHIN
    table = {"sgemm": sgemm_table([("torch", 8192, "time", 22.1)])}
    assert outcome_of(spread, table, hardware_dir).status == OUTSIDE
    near = claim(expected={"value": 1.18}, tolerance={"absolute": 2.0, "why": "two cards"}, unit="ms")
    (loaded,) = load_claims(
        [write_claims(hardware_dir.parent / "e", near)], SCHEMA, load_hardware(hardware_dir)
    )
    # clamped at 0, the physical bound of a time
    assert loaded.accepted_range() == pytest.approx((0.0, 3.18))
    assert loaded.accepted_range(2.0) == pytest.approx((0.0, (2.36 + 4) * 1.1))  # and the 10% scaling


def test_a_value_computed_from_the_sources_numbers(hardware_dir: Path) -> None:
    """The claim states the source's numbers; the verdict does the arithmetic and shows it."""
    power = claim(expected={"computed": "(87 - 61) * 4.37e-3"}, tolerance={"relative": 0.1, "why": "x"})
    (loaded,) = load_claims(
        [write_claims(hardware_dir.parent / "e", power)], SCHEMA, load_hardware(hardware_dir)
    )
    assert loaded.expected.value == pytest.approx(0.11362)
    assert loaded.describe_expected().startswith("0.1136 TFLOP/s (= (87 - 61) * 4.37e-3)")
    table = {"sgemm": sgemm_table([("torch", 8192, "rate", 0.12)])}
    assert outcome_of(power, table, hardware_dir).status == WITHIN


@pytest.mark.parametrize(
    ("tables", "gpus", "why"),
    [
        ({}, None, "no GPU in this run"),
        ({"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)], gpu="cpu")}, 0, "no GPU in this run"),
        ({"reference": reference_table(H200, fp32_gemm=50.0)}, None, "study sgemm did not run here"),
        (
            {"sgemm": sgemm_table([("torch", 4096, "rate", 50.0)])},
            None,
            "point absent: no row of tables/sgemm.csv where backend=torch, n=8192",
        ),
        (
            {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)]).drop(columns="backend")},
            None,
            "has no column backend",
        ),
        ({"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)] * 2)}, None, "2 rows of tables/sgemm.csv"),
        ({"sgemm": sgemm_table([("torch", 8192, "rate", math.nan)])}, None, "has no value"),
        (
            {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)]).assign(unit="GFLOP/s")},
            None,
            "is in GFLOP/s",
        ),
    ],
)
def test_not_measured_says_why(
    hardware_dir: Path, tables: dict[str, pd.DataFrame], gpus: int | None, why: str
) -> None:
    result = outcome_of(claim(), tables, hardware_dir, gpus)
    assert result.status == NOT_MEASURED and why in result.detail, result.detail
    assert result.grade == UNMEASURED


def test_a_claim_needing_more_gpus_than_the_run_had(hardware_dir: Path) -> None:
    spec = relative_claim(needs={"gpus": 2})
    tables = {"hfta_speedup": speedup_table([3.0])}
    assert outcome_of(spec, tables, hardware_dir, gpus=1).detail == "needs 2 GPUs; 1 here"
    assert outcome_of(spec, tables, hardware_dir, gpus=2).status == DIRECTION_WITHIN


def test_string_filters_are_patterns(hardware_dir: Path) -> None:
    spec = claim(
        measure={
            "table": "summary",
            "metric": "time",
            "statistic": "median",
            "where": {"scope": "gpu *"},
            "reduce": "max",
        },
        unit="ms",
    )
    summary = pd.DataFrame(
        [
            {"gpu_name": H200, "scope": s, "metric": "time", "statistic": "median", "value": v, "unit": "ms"}
            for s, v in [("gpu 0", 49.0), ("gpu 1", 51.0), ("across gpus", 99.0)]
        ]
    )
    result = outcome_of(spec, {"summary": summary}, hardware_dir)
    assert result.status == WITHIN and result.measured == 51.0


@pytest.mark.parametrize(
    ("counts", "verdict"),
    [
        ({HELD: 3}, REPRODUCED),
        ({HELD: 1, NOT_HELD: 1, UNMEASURED: 2}, PARTIALLY),
        ({HELD: 1, UNMEASURED: 2}, TOO_FEW),
        ({PARTLY: 1, NOT_HELD: 1}, PARTIALLY),
        ({NOT_HELD: 2, UNMEASURED: 1}, NOT_REPRODUCED),
        ({UNMEASURED: 3}, summary.NOT_MEASURED),
    ],
)
def test_a_papers_verdict_from_its_claims(counts: dict[str, int], verdict: str) -> None:
    assert verdict_of(Counter(counts)) == verdict


def test_papers_are_summed_up_first_and_regression_checks_never_count(hardware_dir: Path) -> None:
    hardware = load_hardware(hardware_dir)
    folder = hardware_dir.parent / "expected"
    write_claims(
        folder,
        relative_claim(),
        # another measurement (each is counted once): the speedup's median
        relative_claim(
            id="needs-two", needs={"gpus": 2}, measure={**relative_claim()["measure"], "statistic": "median"}
        ),
        name="paper.yaml",
    )
    write_claims(
        folder, claim(id="ours"), name="ours.yaml", purpose="regression", source={"title": "our run"}
    )
    tables = {
        "hfta_speedup": speedup_table([3.0], gpu=H200),
        "sgemm": sgemm_table([("torch", 8192, "rate", 50.0)]),
    }
    outcomes = evaluate(load_claims([folder], SCHEMA, hardware), tables, hardware, 1)
    (paper,) = paper_verdicts(outcomes)
    # one claim of two testable: a verdict, with its coverage
    assert paper.paper == "a paper" and paper.verdict == REPRODUCED
    assert paper.headline == "reproduced (1 of 2 claims testable here)"
    assert paper.counts == Counter({HELD: 1, UNMEASURED: 1})
    assert paper.describe_unmeasured() == "needs 2 GPUs; 1 here (needs-two)"
    page = render.markdown(outcomes, "h200", Here.of(tables, 1))
    assert (
        page.index("## Per paper")
        < page.index("## Claims of the papers")
        < page.index("## Regression checks")
    )
    assert (
        "| a paper | **reproduced (1 of 2 claims testable here)** | 1 | 0 | 0 | 0 | 0 | 0 | 1 | "
        "needs 2 GPUs; 1 here (needs-two) |"
    ) in page
    regression = page[page.index("## Regression checks") : page.index("## Claims in detail")]
    assert "torch SGEMM at N=8192" in regression and "1 consistent" in regression
    assert "torch SGEMM at N=8192" not in page[: page.index("## Regression checks")]


def _long(gpu: str, keys: dict[str, Any], rows: list[tuple[str, str, float, str]]) -> list[dict[str, Any]]:
    """Long rows of one point: (metric, statistic, value, unit) with the point's key columns."""
    return [
        {"gpu_name": gpu, "gpu_uuid": "GPU-0", **keys, "metric": m, "statistic": st, "value": v, "unit": u}
        for m, st, v, u in rows
    ]


def _power(mean: float, half_width: float) -> list[tuple[str, str, float, str]]:
    return [
        ("power_above_active_idle", "mean", mean, "W"),
        ("power_above_active_idle", "ci_low", mean - half_width, "W"),
        ("power_above_active_idle", "ci_high", mean + half_width, "W"),
        ("power_above_idle", "mean", mean + 55, "W"),
    ]


def h100_tables() -> dict[str, pd.DataFrame]:
    """An H100 quick run's tables, made: one GPU, the inference artifact's points (with active idle and a
    CUDA graph point of DeiT-B), SGEMM at two sizes, HFTA's speedups and its B=32 points over processes,
    and a TF32 ResNet-50 point."""
    point = {"batch_size": 1, "precision": "fp16", "status": "ok"}
    deit = [
        *_long(H100, {**point, "model": "deit-t", "mode": "eager"}, [
            *_power(3.4, 0.8),
            ("energy_per_inference", "above_active_idle", 0.020, "J"),
        ]),
        *_long(H100, {**point, "model": "deit-s", "mode": "eager"}, _power(9.0, 0.9)),
        *_long(H100, {**point, "model": "deit-b", "mode": "eager"}, [
            *_power(19.1, 1.0),
            ("latency", "median", 8.95, "ms"),
            ("latency", "iqr", 0.09, "ms"),
            ("energy_per_inference", "above_idle", 0.6, "J"),
            ("energy_per_inference", "above_active_idle", 0.117, "J"),
        ]),
        *_long(H100, {**point, "model": "deit-b", "mode": "cudagraph"}, [("latency", "median", 0.98, "ms")]),
    ]  # fmt: skip
    bert = [
        row
        for model, seq, mean in [("bert-b", 128, 20.0), ("bert-b", 384, 22.0), ("bert-l", 320, 60.0)]
        for row in _long(H100, {**point, "model": model, "seq_len": seq, "mode": "eager"}, _power(mean, 4.0))
    ]
    reference = _long(H100, {}, [
        ("fp32_gemm", "median", 51.0, "TFLOP/s"),
        ("fp16_gemm", "median", 700.0, "TFLOP/s"),
        ("memory_bandwidth", "median", 2900.0, "GB/s"),
        ("power_limit", "median", 700.0, "W"),
    ])  # fmt: skip
    sgemm = _long(H100, {"backend": "cublas", "n": 25536}, [
        ("rate_vs_sweep_best", "median", 0.99, "1"),
        ("rate_vs_sweep_best", "ci_low", 0.985, "1"),
        ("rate_vs_sweep_best", "ci_high", 0.995, "1"),
    ])  # fmt: skip
    variability = _long(H100, {"backend": "cublas", "n": 25536, "scope": "gpu 0"}, [
        ("time", "median", 650.0, "ms"),
        ("rate_vs_median_gpu", "value", 1.0, "1"),
    ])  # fmt: skip
    hfta = [
        {"gpu_name": H100, "workload": "resnet18", "precision": "fp16", "baseline": b, "step": step,
         "baseline_step": baseline_step, "metric": "speedup", "statistic": st, "value": v, "unit": "x"}
        # the graphed rows would fail both paper claims: the claims judge stock against stock
        for step, baseline_step, b, v in [
            ("stock", "stock", "serial", 11.0),
            ("stock", "stock", "mps", 1.4),
            ("stock", "stock", "concurrent", 2.2),
            ("graphed", "stock", "serial", 40.0),
            ("stock", "graphed", "mps", 0.5),
            ("graphed", "graphed", "mps", 0.9),
            ("graphed", "stock", "mps", 1.55),
        ]
        for st in ("max", "at_best_b")
    ]  # fmt: skip
    ddp = [
        row
        for p, v, nhwc in [("fp16", 4600.0, True), ("tf32", 1790.0, False)]
        for row in _long(H100, {"model": "resnet50", "gpus": 1, "precision": p, "status": "ok",
                                "channels_last": nhwc}, [("throughput", "total", v, "images/s")])
    ]  # fmt: skip
    # the speedups' intervals across processes, paired by run (hfta_study/summary.py)
    hfta += [
        {**row, "statistic": f"{row['statistic']}_{end}", "value": row["value"] * factor}
        for row in hfta
        for end, factor in (("ci_low", 0.95), ("ci_high", 1.05))
    ]
    # the fused array's own rate at B=32 over its processes (process_table.py), beside MPS's
    hfta_processes = [
        row
        for mode, v in [("hfta", 131_000.0), ("mps", 82_000.0)]
        for row in _long(H100, {"workload": "resnet18", "precision": "fp16", "mode": mode, "step": "stock",
                                "b": 32, "per_process": "value"},
                         [("throughput", st, v * f, "samples/s")
                          for st, f in (("median", 1.0), ("ci_low", 0.98), ("ci_high", 1.02))])
    ]  # fmt: skip
    frames = {"inference_deit": deit, "inference_bert": bert, "reference": reference, "sgemm": sgemm,
              "variability_summary": variability, "hfta_speedup": hfta, "hfta_processes": hfta_processes,
              "ddp": ddp,
              "inference_deit_processes": _over_processes(deit),
              "inference_bert_processes": _over_processes(bert)}  # fmt: skip
    return {name: pd.DataFrame(rows) for name, rows in frames.items()}


def _over_processes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The across-process table (process_table.py) of made inference rows: each power mean with its
    interval read as the median over processes at the point's median pace with its interval across them
    (inference/pace.py), and each energy per inference above active idle likewise."""
    across = {"mean": "median", "ci_low": "ci_low", "ci_high": "ci_high"}
    power = [
        {**{k: v for k, v in row.items() if k != "status"}, "per_process": "at_median_pace",
         "statistic": across[row["statistic"]]}
        for row in rows
        if row["metric"] == "power_above_active_idle"
    ]  # fmt: skip
    energy = [
        {**{k: v for k, v in row.items() if k != "status"}, "per_process": "above_active_idle",
         "statistic": statistic, "value": row["value"] + offset}
        for row in rows
        if row["metric"] == "energy_per_inference" and row["statistic"] == "above_active_idle"
        for statistic, offset in (("median", 0.0), ("ci_low", -0.003), ("ci_high", 0.003))
    ]  # fmt: skip
    return power + energy


def test_made_tables_of_an_h100_give_each_reading_a_reviewer_can_sign() -> None:
    """No GPU of the papers here. Every shipped paper claim reads as it should: relative ones judged,
    absolute ones scaled only through measured rates, power by orderings and a same-run difference, the
    A100's watts informational, the eager latency host-bound, an SGEMM time not compared with the GPU's
    own rate, what needs more GPUs or a cluster or MIG says so; and nothing held on a range that cannot
    fail."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = load_claims([ROOT / "config" / "expected"], SCHEMA, hardware)
    all_outcomes = evaluate(claims, h100_tables(), hardware)
    outcomes = {o.claim.id: o for o in all_outcomes}
    latency = outcomes["deit-b-a100-latency-bs1-amp"]
    assert latency.result == NOT_COMPARABLE and latency.grade == UNTESTABLE
    assert "host-bound (89% host time: eager 8.95 ms, CUDA graph 0.98)" in latency.detail
    for power in ("deit-t-a100-power-above-idle", "bert-l-s320-a100-power-above-idle"):
        assert outcomes[power].result == SHOWN and outcomes[power].grade == INFO
    assert outcomes["deit-b-a100-energy-per-inference"].grade == INFO
    assert outcomes["deit-power-order"].result == ORDER_HOLDS
    assert outcomes["deit-power-order"].describe_measured() == "3.4 < 9 < 19.1 W"
    bert = outcomes["bert-power-order"]  # s128 and s384 overlap: not read
    assert bert.result == NOT_RESOLVED and "[16, 24] overlaps [18, 26]" in bert.detail
    # the A100's joules (at its clocks for each model), which no checked rule scales: shown beside this
    # GPU's 0.117 - 0.020 J, with no accepted range, never counted
    difference = outcomes["deit-b-minus-deit-t-power"]
    assert difference.result == SHOWN and difference.grade == INFO
    assert difference.values == pytest.approx((0.097,)) and "accepted" not in difference.detail
    assert "0.08303 J (= (87 - 68) * 4.37e-3) (±0.026 J) on A100 80GB" in difference.detail
    # the same eager timing, read by the same rule: its block-to-block spread is the host's too
    stability = outcomes["deit-b-a100-latency-stability"]
    assert stability.result == NOT_COMPARABLE and stability.grade == UNTESTABLE
    assert "host-bound (89% host time: eager 8.95 ms, CUDA graph 0.98)" in stability.detail
    assert "0.09 ms (tables/inference_deit.csv: latency iqr" in stability.detail
    seed_time = outcomes["seed-v100-cublas-time-per-gpu"]
    assert seed_time.result == NOT_COMPARABLE and "compares the GPU with itself" in seed_time.detail
    plateau = outcomes["seed-n25536-on-plateau"]  # one size swept: a plateau cannot be told
    assert plateau.result == NOT_TESTABLE and plateau.detail == (
        "cannot judge: a plateau needs at least 3 values of n swept, this run swept 1 (25536)"
    )
    assert outcomes["seed-node-time-spread"].detail == "needs 2 GPUs; 1 here"
    outliers = outcomes["sc22-outliers-vs-median-gpu"]  # a bound over a cluster's tail
    assert outliers.result == NOT_TESTABLE and outliers.detail.startswith(
        "needs 300 GPUs of one model, 1 here (the outliers are the slowest few cards"
    )
    assert outcomes["sc22-average-variation"].detail.startswith("needs a cluster's worth of GPUs")
    assert outcomes["hfta-speedup-over-mig"].detail.startswith("needs MIG partitions")
    # the per-baseline ranges, not found in the paper or its artifact since 2026-11-29: shown, not
    # counted, and say so; the abstract's "up to 15.1x", a maximum over the paper's workloads, is read
    # from the same measurement and shown beside it
    for ranged in ("hfta-speedup-over-serial", "hfta-speedup-over-mps"):
        assert outcomes[ranged].grade == INFO
        assert outcomes[ranged].status.endswith("(shown, not counted) (protocol revised 2026-11-29)")
    assert outcomes["hfta-up-to-15x"].status == f"{DIRECTION_WITHIN} (shown, not counted)"
    fused = outcomes["h100-hfta-fused-b32-throughput"]  # on its own GPU: read exactly, its own row
    assert fused.judged == "exact" and fused.result == WITHIN and fused.values == (131_000.0,)
    assert "from tables/hfta_processes.csv: throughput median where workload=resnet18" in fused.detail
    assert outcomes["h100-hfta-graphed-fused-over-stock-mps-b32"].values == (1.55,)  # its own row
    assert outcomes["nvidia-resnet50-a100-amp-over-tf32"].result == DIRECTION_WITHIN  # 2.57x
    assert outcomes["nvidia-resnet50-v100-amp-over-fp32"].result == NOT_COMPARABLE
    a100 = outcomes["nvidia-resnet50-a100-80gb-amp-1gpu"]  # no A100 rate measured: datasheets both sides
    assert a100.status == f"scaled from A100 80GB: {WITHIN} (protocol revised 2026-11-29)"
    # the datasheet ratio to the calibrated exponent (test_verdict_calibration.py)
    assert a100.factor == pytest.approx(
        ((989.5 / 312) * (3350 / 2039)) ** (0.5 * shipped_calibration().exponent)
    )
    assert "(fp16_gemm, datasheet against datasheet: 989.5 TFLOP/s (datasheet: H100 SXM)" in a100.detail
    # the H200's rates were measured: measured against measured
    h200 = outcomes["h200-resnet50-1gpu"]
    assert h200.factor == pytest.approx(((700 / 761.7) * (2900 / 4178)) ** 0.5) and h200.result == WITHIN
    assert "(fp16_gemm, measured against measured: 700 TFLOP/s measured here / 761.7 TFLOP/s" in h200.detail
    assert outcomes["nvidia-resnet50-a100-80gb-amp-8gpu-speedup"].detail == "needs 8 GPUs; 1 here"
    for outcome in all_outcomes:
        if "h100-sxm" not in outcome.claim.gpus:  # only the project's own H100 checks are on their GPU
            assert outcome.judged != "exact", f"{outcome.claim.id} judged exactly on an H100"
        if outcome.grade == HELD and not outcome.claim.order:
            factor = outcome.factor
            assert not untestable_reason(outcome.claim.expected, outcome.accepted, factor), outcome.claim.id
    papers = {p.paper: p.headline for p in paper_verdicts(all_outcomes)}
    assert papers["HFTA (Wang et al., MLSys'21)"] == (
        "too few claims testable here (0 of 3 distinct measurements testable here, of 4 claims)"
    )
    assert (
        papers["SC22 GPU variability (Sinha et al.)"]
        == "too few claims testable here (0 of 2 claims testable here)"
    )
    assert papers["Power Variability on GPUs (the seed project)"] == (
        "too few claims testable here (0 of 3 claims testable here)"
    )
    # the power orders hold by the models' sizes: shown, not counted (one held, one inconclusive)
    assert papers["Lightening-Transformer GPU baseline (Zhu et al., HPCA'24)"] == (
        "too few claims testable here (0 of 12 claims testable here)"
    )


# The pace an H100's host ran DeiT at, eager at batch 1 (inferences a second): watts above active idle at
# that pace over it give the energy per inference above active idle.
DEIT_RATE = 160.0


def _processes_of(power: dict[str, list[float]], gpu: str = H100) -> dict[str, pd.DataFrame]:
    """A quick run's DeiT tables (an H100's unless `gpu` names another) with each model's power above
    active idle at its median pace in its processes (one row set per run), the energy per inference above
    active idle it comes from, and the across-process table process_table.py makes of them."""
    point = {"gpu_name": gpu, "gpu_uuid": "GPU-0", "batch_size": 1, "precision": "fp16", "mode": "eager"}
    rows = [
        {**point, "model": model, "run": run, "status": "ok", "reason": "", "metric": metric,
         "statistic": statistic, "value": value, "unit": unit}
        for model, processes in power.items()
        for run, watts in enumerate(processes, start=1)
        for metric, statistic, value, unit in (
            ("power_above_active_idle", "at_median_pace", watts, "W"),
            ("energy_per_inference", "above_active_idle", watts / DEIT_RATE, "J"),
        )
    ]  # fmt: skip
    deit = pd.DataFrame(rows)
    keys = ["gpu_name", "gpu_uuid", "model", "batch_size", "precision", "mode"]
    return {"inference_deit": deit, "inference_deit_processes": process_table.summarise(deit, keys)}


def test_a_difference_and_an_order_are_read_over_the_processes_themselves() -> None:
    """DeiT's power above active idle in three processes each, as an H100 measured it, read on the
    artifact's A100 (where the difference's joules are judged; elsewhere they are informational): the
    difference's interval over the processes (Welch) is read and, both sides host-paced, its magnitude is
    host-dependent; the order's second step (DeiT-S to DeiT-B) stays unresolved, and a reversed step does
    not hold."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = load_claims([ROOT / "config" / "expected"], SCHEMA, hardware)
    measured = {
        "deit-t": [8.74, 5.46, 4.84],
        "deit-s": [13.60, 13.05, 12.96],
        "deit-b": [16.84, 32.02, 27.79],
    }
    outcomes = {o.claim.id: o for o in evaluate(claims, _processes_of(measured, A100), hardware)}
    difference = outcomes["deit-b-minus-deit-t-power"]
    # both sides host-paced (eager batch 1): a magnitude unresolved over machines is host-dependent
    assert difference.result == HOST_DEPENDENT and difference.judged == "exact", difference.detail
    low, high = (float(x) for x in difference.detail.split("95% interval [")[1].split("]")[0].split(", "))
    # Welch over 3 and 3 processes: [1.3, 37.1] W at 160 inferences a second, [0.008, 0.23] J
    assert 0 < low < 0.057 and high > 0.109
    order = outcomes["deit-power-order"]
    assert order.result == NOT_RESOLVED
    assert "(includes 0)" in order.detail and order.detail.count("difference [") == 2
    measured["deit-s"] = [60.0, 62.0, 61.0]  # DeiT-S far above DeiT-B in every process
    reversed_order = {o.claim.id: o for o in evaluate(claims, _processes_of(measured, A100), hardware)}
    assert reversed_order["deit-power-order"].result == ORDER_FAILS


def test_on_the_papers_gpu_the_artifacts_watts_are_judged_exactly() -> None:
    """On an A100 80GB SXM4 the power claims are judged as published; an A100 80GB PCIe is not that card."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = [c for c in load_claims([ROOT / "config" / "expected"], SCHEMA, hardware)]
    claims = [c for c in claims if c.id == "deit-b-a100-power-above-idle"]
    for gpu, grade in (("NVIDIA A100-SXM4-80GB", HELD), ("NVIDIA A100 80GB PCIe", INFO)):
        table = pd.DataFrame(_long(gpu, {"model": "deit-b", "batch_size": 1, "precision": "fp16",
                                          "mode": "eager", "status": "ok"}, _power(-30.0, 1.0)))  # fmt: skip
        (outcome,) = evaluate(claims, {"inference_deit": table}, hardware)
        assert outcome.grade == grade, gpu  # 25 W above idle: within 26 +- 5 W on the A100


@pytest.mark.parametrize(
    ("expected", "tolerance", "why"),
    [
        ({"value": 2.8}, {"absolute": 3.0}, "its accepted range reaches 0"),
        ({"value": 7.0}, {"absolute": 5.0}, "is 6x as wide as the paper's figure"),
        ({"min": 2262, "max": 2326}, {"relative": 0.05}, ""),
        ({"min": 2470}, {"relative": 0.1}, ""),
        ({"min": 2470}, {"relative": 1.5}, "is 2.5x as wide"),
        ({"max": 22}, {"relative": 0}, ""),
    ],
)
def test_a_range_that_cannot_fail_is_not_testable(
    hardware_dir: Path, expected: dict[str, float], tolerance: dict[str, float], why: str
) -> None:
    spec = claim(expected=expected, tolerance={**tolerance, "why": "x"})
    (loaded,) = load_claims(
        [write_claims(hardware_dir.parent / "e", spec)], SCHEMA, load_hardware(hardware_dir)
    )
    reason = untestable_reason(loaded.expected, loaded.accepted_range())
    assert why in reason if why else reason == "", reason
    if why:
        value = loaded.expected.value or loaded.expected.low
        table = {"sgemm": sgemm_table([("torch", 8192, "rate", value)])}
        outcome = outcome_of(spec, table, hardware_dir)
        assert outcome.result == NOT_TESTABLE and outcome.grade == UNTESTABLE and why in outcome.detail


def _spread_table(low: float, high: float, gpus: int = 2) -> dict[str, pd.DataFrame]:
    rows = [
        {"gpu_name": H200, "gpu_uuid": f"GPU-{i}", "scope": f"gpu {i}", "metric": "time",
         "statistic": "median", "value": 100.0, "unit": "ms"}
        for i in range(gpus)
    ] + [
        {"gpu_name": H200, "gpu_uuid": None, "scope": "across gpus", "metric": "time", "statistic": st,
         "value": v, "unit": "%"}
        for st, v in [("spread_pct", (low + high) / 2), ("spread_pct_ci_low", low),
                      ("spread_pct_ci_high", high)]
    ]  # fmt: skip
    return {"variability_summary": pd.DataFrame(rows)}


@pytest.mark.parametrize(
    ("low", "high", "result"),
    [(-0.3, 0.7, NOT_RESOLVED), (1.5, 2.5, DIRECTION_UNTESTED), (0.0, 0.4, NOT_RESOLVED)],
)
def test_a_spread_between_gpus_is_read_only_where_its_interval_excludes_none(
    hardware_dir: Path, low: float, high: float, result: str
) -> None:
    """Two H200s 0.21% apart with reps varying 1%: the interval includes 0, so no direction is read; a
    resolved spread holds in direction, its magnitude (2.8 +- 3 points: reaches 0) not testable."""
    spec = relative_claim(
        study="variability",
        measure={"table": "variability_summary", "metric": "time", "statistic": "spread_pct",
                 "where": {"scope": "across gpus"}, "interval": {"low": "spread_pct_ci_low",
                                                                 "high": "spread_pct_ci_high"}},
        expected={"value": 2.8}, tolerance={"absolute": 3.0, "why": "luck"}, direction={"above": 0},
        unit="%", needs={"gpus": 2},
    )  # fmt: skip
    outcome = outcome_of(spec, _spread_table(low, high), hardware_dir)  # GPUs counted by UUID: 2
    assert outcome.result == result, outcome.detail
    assert f"[{low:.4g}, {high:.4g}]" in outcome.detail
    # a direction alone tests no magnitude the paper found: shown, never counted toward "reproduced"
    assert outcome.grade == (UNRESOLVED if result == NOT_RESOLVED else UNTESTABLE)


def test_an_order_reversed_beyond_its_intervals_does_not_hold(hardware_dir: Path) -> None:
    spec = relative_claim(
        measure={"table": "power", "metric": "power_above_active_idle", "statistic": "mean",
                 "interval": {"low": "ci_low", "high": "ci_high"}},
        order=[{"model": "small"}, {"model": "large"}], expected=None, tolerance=None, direction=None,
        unit="W",
    )  # fmt: skip
    rows = _long(H200, {"model": "small"}, _power(30.0, 1.0)) + _long(
        H200, {"model": "large"}, _power(20.0, 1.0)
    )
    outcome = outcome_of(spec, {"power": pd.DataFrame(rows)}, hardware_dir)
    assert outcome.result == ORDER_FAILS and "(reversed)" in outcome.detail


def test_gpus_are_counted_by_uuid() -> None:
    two = pd.DataFrame({"gpu_name": [H200, H200], "gpu_uuid": ["GPU-a", "GPU-b"]})
    assert Here.of({"t": two}).gpu_count == 2 and Here.of({"t": two}, 1).gpu_count == 1
    assert Here.of({"t": two.drop(columns="gpu_uuid")}).gpu_count == 1


@pytest.mark.parametrize(
    ("name", "gpu", "matches"),
    [
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb", True),
        ("NVIDIA A100 80GB PCIe", "a100-sxm4-80gb", False),
        ("NVIDIA H200", "h200", True),
        ("NVIDIA H200 NVL", "h200", False),
        ("NVIDIA H100 80GB HBM3", "h100-sxm", True),
        ("NVIDIA H100 PCIe", "h100-sxm", False),
        ("Tesla V100-SXM2-16GB", "v100-sxm2", True),
        ("Tesla V100-PCIE-16GB", "v100-sxm2", False),
    ],
)
def test_gpu_names_are_anchored(name: str, gpu: str, matches: bool) -> None:
    assert load_hardware(ROOT / "config" / "hardware")[gpu].matches(name) is matches


def test_not_measured_tells_a_missing_metric_from_a_missing_point(hardware_dir: Path) -> None:
    old = sgemm_table([("torch", 8192, "time", 20.0)])  # the point, but not the metric: an older table
    folder = hardware_dir.parent / "expected"
    hardware = load_hardware(hardware_dir)
    claims = load_claims([write_claims(folder, claim())], SCHEMA, hardware)
    (outcome,) = evaluate(claims, {"sgemm": old}, hardware, rules={"sgemm": "sgemm"})
    assert outcome.detail.startswith("metric absent: tables/sgemm.csv has the point (backend=torch, n=8192)")
    assert "re-aggregate it with `snakemake sgemm --forcerun sgemm`" in outcome.detail
    (outcome,) = evaluate(claims, {"reference": reference_table(H200, fp32_gemm=1)}, hardware,
                          rules={"sgemm": "sgemm"})  # fmt: skip
    assert (
        outcome.detail.startswith("table absent: no tables/sgemm.csv")
        and "`snakemake sgemm`" in outcome.detail
    )


def test_the_resnet50_scaling_rule_against_nvidias_own_a100_v100_pair() -> None:
    """NVIDIA published 2,470 images/s on an A100 80GB and 1,200 on a V100 (2.06x); the rule (FP16 tensor
    rate and memory bandwidth, geometric mean, datasheet rates) predicts 2.38x, and calibrated (its ratio
    to the exponent the published pairs and shipped runs fit) about 2.04x. The claim's uncertainty must
    cover the calibrated rule's error, both ways, so a scaled figure is not failed by the rule's own
    error."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = {c.id: c for c in load_claims([ROOT / "config" / "expected"], SCHEMA, hardware)}
    a100, v100 = hardware["a100-sxm4-80gb"], hardware["v100-sxm2"]
    scaling = claims["nvidia-resnet50-v100-amp-1gpu"].scaling
    assert scaling is not None
    raw = scale_factor(uncalibrated(scaling), v100, {}, a100).value  # datasheet against datasheet
    assert raw == pytest.approx(2.38, abs=0.01)
    predicted = scale_factor(scaling, v100, {}, a100).value
    assert predicted == pytest.approx(raw**scaling.calibrated)  # type: ignore[operator]
    assert abs(predicted / (2470 / 1200) - 1) <= scaling.uncertainty
    low, _ = claims["nvidia-resnet50-v100-amp-1gpu"].accepted_range(predicted)
    assert low <= 2470  # the A100's published figure passes the V100 claim scaled to an A100
    back = scale_factor(scaling, a100, {}, v100).value
    low, _ = claims["nvidia-resnet50-a100-80gb-amp-1gpu"].accepted_range(back)
    assert low <= 1200


def test_a_papers_headline_below_half_testable_says_so() -> None:
    assert verdict_of(Counter({HELD: 1, UNTESTABLE: 1, INFO: 1})) == TOO_FEW
    assert verdict_of(Counter({HELD: 2, UNTESTABLE: 1, UNRESOLVED: 1})) == REPRODUCED
    assert verdict_of(Counter({UNTESTABLE: 2})) == TOO_FEW


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (claim(kind=None), "key claims.0: 'kind' is a required property (claim h200-rate)"),
        (claim(scaling=None), "key claims.0: "),
        (claim(expected=None), "key claims.0: 'expected' is a required property (claim h200-rate)"),
        (
            claim(gpu="a100"),
            "key gpu: 'a100' has no hardware entry config/hardware/a100.yaml (known: h100, h200, v100)",
        ),
        (relative_claim(gpu=["v100", "t4"]), "key gpu: 't4' has no hardware entry"),
        (
            claim(gpu="v100", scaling={**FP32_SCALING, "with": {"fp16_gemm": 0.5}}),
            "key scaling.with: fp16_gemm: the hardware entry config/hardware/v100.yaml has no rate fp16_gemm",
        ),
        (claim(gpu=["h200", "v100"]), "key claims.0.gpu"),
        (
            claim(tolerance={"relative": 0.1}),
            "claims.yaml: key claims.0.tolerance: 'why' is a required property (claim h200-rate)",
        ),
        (
            claim(expected={"min": 3, "max": 2}),
            "claim h200-rate (claims.0): key expected: min 3 is more than max 2",
        ),
        (
            claim(expected={"value": 1, "max": 2}),
            "key claims.0.expected: {'max': 2, 'value': 1} is not any of the allowed forms: a value alone "
            '({value: 4.37}), or a value computed alone ({computed: "87 - 61"}), or a range or a bound: '
            "min and/or max, without value or computed ({min: 2.42, max: 11.5}) (claim h200-rate)",
        ),
        (
            claim(tolerance={"relative": 0.1, "absolute": 1, "why": "x"}),
            "key claims.0.tolerance: {'absolute': 1, 'relative': 0.1, 'why': 'x'} is not any of the allowed "
            "forms: relative alone ({relative: 0.1, why: ...}), or absolute alone ({absolute: 5, why: ...}), "
            "or neither (exact: {why: ...}) (claim h200-rate)",
        ),
        (
            claim(measure={"table": "sgemm", "metric": "rate"}),
            "key claims.0.measure: 'statistic' is a required property",
        ),
        (claim(measure={**claim()["measure"], "reduce": "each"}, divide_by={}), "not reduce: each"),
        (claim(unit_of="ms"), "('unit_of' was unexpected); allowed keys:"),
        (
            claim(expected={"computed": "87 - 61", "max": 30}),
            "key claims.0.expected: {'computed': '87 - 61', 'max': 30} is not any of the allowed forms",
        ),
        (claim(expected={"computed": "87 -- 61 *"}), "key expected.computed: '87 -- 61 *'"),
        (claim(expected={"computed": "2 ** 10"}), "key expected.computed: '2 ** 10': only numbers, + - * /"),
        (claim(expected={"computed": "1 / 0"}), "key expected.computed: '1 / 0': float division by zero"),
        (claim(expected={"computed": "__import__('os')"}), "key claims.0.expected.computed"),
    ],
)
def test_bad_claim_files_name_the_file_and_key(
    hardware_dir: Path, spec: dict[str, Any], message: str
) -> None:
    path = write_claims(hardware_dir.parent / "expected", spec)
    with pytest.raises(GpureproError) as err:
        load_claims([path.parent], SCHEMA, load_hardware(hardware_dir))
    assert f"bad claim file {path}" in str(err.value) and message in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rates": {"fp32_gemm": {}}}, "key rates.fp32_gemm"),
        ({"nvml_names": ["V100("]}, "key nvml_names: 'V100('"),
        ({"rates": {"fp64_gemm": {"datasheet": 7.8}}}, "('fp64_gemm' was unexpected)"),
    ],
)
def test_bad_hardware_files_name_the_file_and_key(
    hardware_dir: Path, change: dict[str, Any], message: str
) -> None:
    (hardware_dir / "v100.yaml").write_text(yaml.safe_dump({**HARDWARE["v100"], **change}))
    with pytest.raises(GpureproError) as err:
        load_hardware(hardware_dir)
    assert f"bad hardware file {hardware_dir / 'v100.yaml'}" in str(err.value) and message in str(err.value)


def test_claim_ids_are_unique_across_files(hardware_dir: Path) -> None:
    folder = hardware_dir.parent / "expected"
    write_claims(folder, claim(), name="a.yaml")
    write_claims(folder, claim(), name="b.yaml")
    with pytest.raises(GpureproError, match=r"claim id 'h200-rate' is already used in .*a\.yaml"):
        load_claims([folder], SCHEMA, load_hardware(hardware_dir))


def test_a_claim_without_any_source_fails(hardware_dir: Path) -> None:
    (hardware_dir.parent / "c.yaml").write_text(yaml.safe_dump({"claims": [claim()]}))
    with pytest.raises(GpureproError, match="key source: no source title"):
        load_claims([hardware_dir.parent / "c.yaml"], SCHEMA, load_hardware(hardware_dir))


def test_cli_writes_markdown_csv_html_and_the_landing_page(tmp_path: Path, hardware_dir: Path) -> None:
    claims = write_claims(
        tmp_path / "expected",
        claim(),
        # each claim its own measurement (a measurement is counted once: test_verdict_counted_once.py)
        claim(id="v100-rate", gpu="v100", claim="a V100 reaches 10 TFLOP/s", expected={"value": 10.0},
              measure={**claim()["measure"], "where": {"backend": "torch", "n": 4096}}),
        relative_claim(measure={**relative_claim()["measure"], "reduce": "each"}),
        claim(id="slow", expected={"value": 80.0},
              measure={**claim()["measure"], "where": {"backend": "torch", "n": 16384}}),
    )  # fmt: skip
    out = tmp_path / "results" / "h200"
    tables = out / "tables"
    tables.mkdir(parents=True)
    rates = [("torch", n, "rate", 51.0) for n in (8192, 4096, 16384)]
    sgemm_table(rates).to_csv(tables / "sgemm.csv", index=False)
    reference_table(H200, fp32_gemm=51.0).to_csv(tables / "reference.csv", index=False)
    plot = out / "plots" / "sgemm.png"
    plot.parent.mkdir()
    plot.write_bytes(b"png")
    args = [
        "verdict", "--profile", "h200", "--claims", str(claims), "--hardware", str(hardware_dir),
        "--schema", str(SCHEMA), "--tables", str(tables / "sgemm.csv"), str(tables / "reference.csv"),
        "--plots", str(plot), "--gpus", "1", "--md", str(out / "verdict.md"),
        "--csv", str(out / "verdict.csv"), "--html", str(out / "verdict.html"),
        "--rst", str(out / "verdict_summary.rst"),
    ]  # fmt: skip
    result = run_gpurepro(*args)
    assert result.returncode == 0, result.stderr
    assert (
        "verdict for profile h200: a paper: partially reproduced (3 of 4 claims testable here)"
        in result.stderr
    )
    verdict = pd.read_csv(out / "verdict.csv")
    assert list(verdict["status"]) == [
        WITHIN,
        f"scaled from V100 SXM2: {OUTSIDE}",
        NOT_MEASURED,
        OUTSIDE,
    ]
    assert list(verdict["grade"]) == [HELD, NOT_HELD, UNMEASURED, NOT_HELD]
    assert verdict.loc[0, "measured"] == 51.0 and verdict.loc[0, "plot"] == "plots/sgemm.png"
    assert verdict.loc[1, "scale_factor"] == pytest.approx(67 / 15.7)  # datasheet against datasheet
    page = (out / "verdict.md").read_text()
    assert (
        "| ✅ | torch SGEMM at N=8192 reaches 50 TFLOP/s | absolute; measured on NVIDIA H200; paper: H200 |"
        in page
    )
    assert "[sgemm](plots/sgemm.png)" in page and "study hfta did not run here" in page
    assert f"<b>scaled from V100 SXM2: {OUTSIDE}</b>" in (out / "verdict.html").read_text()
    landing = (out / "verdict_summary.rst").read_text()
    body = publish_parts(landing, writer="html", settings_overrides={"report_level": 2, "halt_level": 2})
    assert (
        "<strong>partially reproduced (3 of 4 claims testable here)</strong>" in body["html_body"]
        and "a paper" in body["html_body"]
    )
    strict = run_gpurepro(*args, "--fail-on-outside")
    assert strict.returncode == 1


def test_nvidia_claims_read_the_ddp_table() -> None:
    """On an A100 80GB the 1-GPU figure is judged exactly; on the 40GB card (not the paper's GPU) it is
    scaled datasheet against datasheet (no A100 rate was measured), the rates the run measured never
    entering; the V100 figure is scaled on either, the same way."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = [c for c in load_claims([ROOT / "config" / "expected"], SCHEMA, hardware) if c.study == "ddp"]
    claims = [c for c in claims if c.purpose == "reproduction"]
    row = {"study": "ddp", "model": "resnet50", "precision": "fp16", "status": "ok", "statistic": "total",
           "metric": "throughput", "unit": "images/s", "gpus": 1}  # fmt: skip
    for rate, status in ((2600.0, WITHIN), (2000.0, OUTSIDE)):
        table = pd.DataFrame([{**row, "gpu_name": "NVIDIA A100-SXM4-80GB", "value": rate}])
        outcomes = {o.claim.id: o for o in evaluate(claims, {"ddp": table}, hardware, gpu_count=1)}
        assert (
            outcomes["nvidia-resnet50-a100-80gb-amp-1gpu"].status == f"{status} (protocol revised 2026-11-29)"
        )
        assert outcomes["nvidia-resnet50-a100-80gb-amp-8gpu-speedup"].detail == "needs 8 GPUs; 1 here"
        # no reference rates measured, none needed: datasheet against datasheet, calibrated (2.04x: 2,451
        # images/s)
        v100 = outcomes["nvidia-resnet50-v100-amp-1gpu"]
        assert v100.status == f"scaled from V100 SXM2: {status} (protocol revised 2026-11-29)"
        assert (
            "(memory_bandwidth, datasheet against datasheet: 2039 GB/s (datasheet: A100 80GB)" in v100.detail
        )
    forty = "NVIDIA A100-SXM4-40GB"
    tables = {
        "ddp": pd.DataFrame([{**row, "gpu_name": forty, "value": 2300.0}]),
        "reference": pd.DataFrame(
            [
                {"gpu_name": forty, "metric": m, "statistic": "median", "value": v, "unit": u}
                for m, v, u in [("fp16_gemm", 260.0, "TFLOP/s"), ("memory_bandwidth", 1300.0, "GB/s")]
            ]
        ),
    }
    outcomes = {o.claim.id: o for o in evaluate(claims, tables, hardware, gpu_count=1)}
    eighty = outcomes["nvidia-resnet50-a100-80gb-amp-1gpu"]
    assert eighty.status == f"scaled from A100 80GB: {WITHIN} (protocol revised 2026-11-29)"
    assert eighty.factor == pytest.approx(
        ((312 / 312) * (1555 / 2039)) ** (0.5 * shipped_calibration().exponent)
    )
    assert outcomes["nvidia-resnet50-v100-amp-1gpu"].status == (
        f"scaled from V100 SXM2: {WITHIN} (protocol revised 2026-11-29)"
    )


def _ddp_on(gpu_name: str, images_per_s: float, tf32: tuple[float, bool] | None = None) -> pd.DataFrame:
    """One GPU's ResNet-50 ddp rows: AMP in channels_last, and a TF32 point in the layout given."""
    row = {"study": "ddp", "model": "resnet50", "status": "ok", "statistic": "total", "metric": "throughput",
           "unit": "images/s", "gpus": 1, "gpu_name": gpu_name}  # fmt: skip
    rows = [{**row, "precision": "fp16", "channels_last": True, "value": images_per_s}]
    if tf32 is not None:
        rows.append({**row, "precision": "tf32", "channels_last": tf32[1], "value": tf32[0]})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("rate", "status"), [(5500.0, WITHIN), (4000.0, OUTSIDE)])
def test_one_table_reads_alike_on_a_gpu_two_generations_from_its_oldest(rate: float, status: str) -> None:
    """On an H200 NVIDIA's V100 figure would be scaled from datasheets across two generations (Volta to
    Hopper), which the rule was never checked over: it reads through the same table's A100 80GB figure,
    so the table's two one-GPU figures read alike (5,461 images/s read 'not held' from the V100 and
    'held' from the A100 before)."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = [c for c in load_claims([ROOT / "config" / "expected"], SCHEMA, hardware) if c.study == "ddp"]
    outcomes = {o.claim.id: o for o in evaluate(claims, {"ddp": _ddp_on("NVIDIA H200", rate)}, hardware, 1)}
    a100, v100 = outcomes["nvidia-resnet50-a100-80gb-amp-1gpu"], outcomes["nvidia-resnet50-v100-amp-1gpu"]
    assert a100.status == f"scaled from A100 80GB: {status} (protocol revised 2026-11-29)"
    assert v100.status == a100.status  # its reading through the A100's, both revised on one day
    assert v100.grade == a100.grade and v100.factor == a100.factor
    assert (
        "bridges 2 GPU generations" in v100.detail and "read through nvidia-resnet50-a100-80gb" in v100.detail
    )
    # without a figure to read through, the same bridge reads not comparable
    lone = replace(claims[[c.id for c in claims].index("nvidia-resnet50-v100-amp-1gpu")], scaling=replace(
        v100.claim.scaling, through=None))  # fmt: skip
    (alone,) = evaluate([lone], {"ddp": _ddp_on("NVIDIA H200", rate)}, hardware, 1)
    assert alone.result == NOT_COMPARABLE and "no figure of the same table on a nearer GPU" in alone.detail


@pytest.mark.parametrize(
    ("tf32", "result"),
    [((1859.0, False), DIRECTION_WITHIN), ((2514.0, True), NOT_MEASURED)],
)
def test_amp_over_tf32_is_read_from_a_tf32_run_in_nchw(tf32: tuple[float, bool], result: str) -> None:
    """DeepLearningExamples trains TF32 in NCHW (only AMP in NHWC): 4,591 / 1,859 = 2.47x on one H100 is
    the paper's protocol; a TF32 row in channels_last (1.83x) is not the claim's point."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = [c for c in load_claims([ROOT / "config" / "expected"], SCHEMA, hardware) if c.study == "ddp"]
    (claim_,) = [c for c in claims if c.id == "nvidia-resnet50-a100-amp-over-tf32"]
    (read,) = evaluate([claim_], {"ddp": _ddp_on(H100, 4591.0, tf32)}, hardware, 1)
    assert read.result == result, read.detail
    assert claim_.protocol is not None and "TF32 in NCHW" in claim_.protocol.paper


def test_a_difference_that_moves_the_figure_reads_not_comparable(hardware_dir: Path) -> None:
    moving = {"what": "memory format", "moves": True, "why": "1.83x against 2.47x"}
    protocol = {"paper": "TF32 in NCHW", "here": "TF32 in NHWC", "differences": [moving]}
    read = outcome_of(
        claim(protocol=protocol), {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)])}, hardware_dir
    )
    assert read.result == NOT_COMPARABLE and read.grade == UNTESTABLE
    assert "moves the figure: memory format (1.83x against 2.47x)" in read.detail
    # a difference that does not move the figure is named beside the reading, which stands
    protocol["differences"][0]["moves"] = False
    read = outcome_of(
        claim(protocol=protocol), {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)])}, hardware_dir
    )
    assert read.result == WITHIN
    page = render.markdown([read], "h200", Here.of({"sgemm": sgemm_table([])}))
    assert "- difference (does not move the figure): memory format; 1.83x against 2.47x" in page
    assert "- the paper measured: TF32 in NCHW" in page and "- measured here: TF32 in NHWC" in page


def test_a_revised_or_uncounted_claim_says_so() -> None:
    """Pre-registration: DeiT-B minus DeiT-T was re-expressed after it met real tables, and made
    informational off the A100 after the shipped runs compared the A100's joules unscaled, which its
    status carries; the power orders hold by the models' sizes on any GPU, so they are shown, never
    counted."""
    shipped = {c.id: c for c in load_claims([ROOT / "config" / "expected"], SCHEMA)}
    revised = shipped["deit-b-minus-deit-t-power"]
    assert [r.date for r in revised.revisions] == ["2026-11-27", "2026-11-29"]
    assert "28.2 W [26.9, 31.0]" in revised.revisions[0].before
    assert "0.0898 J [0.0609, 0.1187]" in revised.revisions[1].before
    order = shipped["deit-power-order"]
    tables = {"inference_deit_processes": pd.DataFrame([
        {"gpu_name": H100, "model": m, "batch_size": 1, "precision": "fp16", "mode": "eager",
         "per_process": "at_median_pace", "metric": "power_above_active_idle", "statistic": st,
         "value": v + d, "unit": "W"}
        for m, v in (("deit-t", 5.0), ("deit-s", 9.0), ("deit-b", 23.0))
        for st, d in (("median", 0.0), ("ci_low", -0.5), ("ci_high", 0.5))
    ])}  # fmt: skip
    (read,) = evaluate([order], tables, load_hardware(ROOT / "config" / "hardware"))
    assert (
        read.result == ORDER_HOLDS
        and read.grade == INFO
        and read.status == "order holds (shown, not counted) (protocol revised 2026-11-28)"
    )
    (paper,) = paper_verdicts([read])
    assert paper.testable == 0
    deit = {"inference_deit_processes": pd.DataFrame([
        {"gpu_name": H100, "model": m, "batch_size": 1, "precision": "fp16", "mode": "eager",
         "per_process": "above_active_idle", "metric": "energy_per_inference", "statistic": st,
         "value": v + d, "unit": "J"}
        for m, v in (("deit-t", 0.02), ("deit-b", 0.11))
        for st, d in (("median", 0.0), ("ci_low", -0.002), ("ci_high", 0.002))
    ])}  # fmt: skip
    (diff,) = evaluate([revised], deit, load_hardware(ROOT / "config" / "hardware"))
    assert diff.status == "informational (protocol revised 2026-11-29)"
    (unmeasured,) = evaluate([revised], {}, load_hardware(ROOT / "config" / "hardware"))
    assert unmeasured.status == NOT_MEASURED  # nothing was read, so nothing was read under a revision


def test_the_scaling_rule_holds_on_every_published_pair_it_may_bridge() -> None:
    """The premise of allowing one generation: on each pair of published figures of one table (NVIDIA's
    V100 and A100 80GB, one GPU and eight), the calibrated rule fitted without that pair predicts it
    within the claims' own uncertainty (test_verdict_calibration.py), and every shipped GPU names its
    generation, without which no bridge could be counted."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    assert all(gpu.generation is not None for gpu in hardware.values())
    checks = published_pairs(load_claims([ROOT / "config" / "expected"], SCHEMA, hardware), hardware)
    assert {(c.older.id, c.newer.id) for c in checks} == {
        ("nvidia-resnet50-v100-amp-1gpu", "nvidia-resnet50-a100-80gb-amp-1gpu"),
        ("nvidia-resnet50-v100-amp-8gpu", "nvidia-resnet50-a100-80gb-amp-8gpu"),
    }
    for check in checks:
        assert check.generations is not None and check.generations <= MAX_DATASHEET_GENERATIONS
        left_out = shipped_calibration().left_out[check.unit]
        assert abs(left_out) < check.older.scaling.uncertainty, check.describe()
    (one_gpu,) = [c for c in checks if c.older.id.endswith("1gpu")]
    assert one_gpu.error == pytest.approx(2.38 / 2.058 - 1, abs=0.01)  # 15% over NVIDIA's own 2.06x


def test_docs_list_every_claims_protocol_as_the_claim_files_state_it() -> None:
    """docs/verdict.md's protocol table is the one the claim files make, so it cannot drift from them;
    every shipped claim states the paper's workload beside ours."""
    claims = load_claims([ROOT / "config" / "expected"], SCHEMA)
    assert all(claim.protocol is not None for claim in claims), [c.id for c in claims if c.protocol is None]
    page = (ROOT / "docs" / "verdict.md").read_text()
    begin, end = "<!-- protocol-table: begin -->\n", "\n<!-- protocol-table: end -->"
    shown = page[page.index(begin) + len(begin) : page.index(end)]
    assert shown == render.protocol_table(claims), "rerun render.protocol_table into docs/verdict.md"


def test_the_per_paper_lines_say_what_the_testable_readings_rest_on(hardware_dir: Path) -> None:
    """Under the per-paper table: the workload measured here for each testable claim, and a quick run's
    reductions where the run was quick (or its plan is unknown), never for a full run."""
    protocol = {
        "paper": "ResNet-18 on a V100",
        "here": "ResNet-18 at 64 px",
        "quick": "three processes a point",
    }
    read = outcome_of(
        claim(protocol=protocol), {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)])}, hardware_dir
    )
    assert read.grade == HELD
    here = Here.of({"sgemm": sgemm_table([])})
    line = "- a paper: ResNet-18 at 64 px (a quick run: three processes a point) (h200-rate)"
    assert line in render.markdown([read], "h200", here, HowMeasured(plan="quick"))
    full = render.markdown([read], "h200", here, HowMeasured(plan="full"))
    assert "- a paper: ResNet-18 at 64 px (h200-rate)" in full and "a quick run:" not in full
