"""The reproduction verdict: claim and hardware files are checked with errors that name the file, claim and
key; an absolute claim is judged exactly on its paper's GPU and scaled through reference rates on any
other, a relative one by its direction apart from its magnitude; a claim that cannot be measured says
why; the per-paper summary comes first and the project's own regression checks stand apart; the CLI
writes Markdown, CSV, HTML and the report's landing page."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from docutils.core import publish_parts

from gpurepro.errors import GpureproError
from gpurepro.verdict import render, summary
from gpurepro.verdict.claims import load_claims
from gpurepro.verdict.evaluate import (
    DIRECTION_FAILS,
    DIRECTION_OUTSIDE,
    DIRECTION_WITHIN,
    HELD,
    NOT_HELD,
    NOT_MEASURED,
    OUTSIDE,
    PARTLY,
    UNMEASURED,
    WITHIN,
    Here,
    evaluate,
)
from gpurepro.verdict.hardware import load_hardware
from gpurepro.verdict.summary import NOT_REPRODUCED, PARTIALLY, REPRODUCED, paper_verdicts, verdict_of

from .conftest import ROOT, run_gpurepro

SCHEMA = ROOT / "workflow" / "schemas" / "claims.schema.yaml"
H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"

# Two GPUs of a test hardware table: the paper's (a measured FP32 rate) and an old one (datasheet only).
HARDWARE = {
    "h200": {
        "name": "H200",
        "nvml_names": ["H200"],
        "source": {"title": "H200 datasheet"},
        "rates": {"fp32_gemm": {"datasheet": 67, "measured": {"value": 50.0, "source": "a run"}}},
    },
    "v100": {
        "name": "V100 SXM2",
        "nvml_names": ["V100-SXM2"],
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
    units = {"fp32_gemm": "TFLOP/s", "power_limit": "W"}
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
    assert {"sc22-v100-cublas-time-per-gpu", "h200-cublas-rate-n8192", "hfta-speedup-over-serial"} <= ids
    assert {"deit-b-a100-latency-bs1-amp", "nvidia-resnet50-a100-80gb-amp-1gpu"} <= ids
    assert all(c.source.get("title") and c.tolerance.why for c in claims)
    assert all(c.scaling for c in claims if c.kind == "absolute")
    assert all(c.direction for c in claims if c.kind == "relative")
    papers = {c.paper for c in claims if c.purpose == "reproduction"}
    assert len(papers) == 4 and all(
        c.paper == "gpurepro reference runs" for c in claims if c.purpose == "regression"
    )


@pytest.mark.parametrize(
    ("value", "status"),
    [(50.0, WITHIN), (45.0, WITHIN), (55.0, WITHIN), (44.9, OUTSIDE), (55.1, OUTSIDE)],
)
def test_on_the_papers_gpu_an_absolute_claim_is_judged_exactly(
    hardware_dir: Path, value: float, status: str
) -> None:
    result = outcome_of(claim(), {"sgemm": sgemm_table([("torch", 8192, "rate", value)])}, hardware_dir)
    assert result.status == status and result.judged == "exact" and result.factor is None
    assert result.measured == pytest.approx(value)
    assert "accepted 45 to 55 TFLOP/s" in result.detail
    assert result.describe_basis() == "measured on NVIDIA H200; paper: H200"


@pytest.mark.parametrize(
    ("value", "result"), [(25.0, WITHIN), (20.5, WITHIN), (30.5, OUTSIDE), (19.5, OUTSIDE)]
)
def test_on_another_gpu_an_absolute_claim_is_scaled_by_reference_rates(
    hardware_dir: Path, value: float, result: str
) -> None:
    """Here the FP32 rate is half the H200's measured 50: 50 TFLOP/s scales to 25, and the tolerance
    (10%) widens by the scaling's uncertainty (10%): 20 to 30."""
    tables = {
        "sgemm": sgemm_table([("torch", 8192, "rate", value)], gpu=H100),
        "reference": reference_table(H100, fp32_gemm=25.0),
    }
    outcome = outcome_of(claim(), tables, hardware_dir)
    assert outcome.result == result and outcome.status == f"scaled from H200: {result}"
    assert outcome.factor == pytest.approx(0.5) and outcome.accepted == pytest.approx((20.0, 30.0))
    assert outcome.describe_expected() == "25 TFLOP/s (±10% and ±10% scaling)"
    assert "fp32_gemm 25 TFLOP/s here / 50 TFLOP/s (measured: a run) on H200" in outcome.detail


def test_a_time_scales_inversely_and_a_range_scales_at_both_ends(hardware_dir: Path) -> None:
    """A V100 time (datasheet 15.7 TFLOP/s) on a GPU measured at 31.4 TFLOP/s: expected half as long."""
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
        "reference": reference_table(H100, fp32_gemm=31.4),
    }
    outcome = outcome_of(spec, tables, hardware_dir)
    assert outcome.factor == pytest.approx(0.5) and outcome.result == WITHIN
    assert outcome.accepted == pytest.approx((1131 * 0.8, 1163 * 1.2))
    assert outcome.describe_measured() == "1000–1200 ms (2 values)"
    assert outcome.describe_expected() == "1131–1163 ms (±5% and ±15% scaling)"
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
    outcome = outcome_of(spec, {"sgemm": sgemm_table([("torch", 8192, "rate", 5.5)], gpu=H100)}, hardware_dir)
    assert outcome.status == "scaled from V100 SXM2: within tolerance" and outcome.factor == 1.0
    assert (
        outcome.accepted == pytest.approx((2.4, 5.6))
        and "not scaled by a GPU rate (bound by the host)" in outcome.detail
    )


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
    assert outcome_of(spec, {"hfta_speedup": speedup_table([1.01])}, hardware_dir).status == DIRECTION_FAILS


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
    assert loaded.accepted_range() == pytest.approx((-0.82, 3.18))
    assert loaded.accepted_range(2.0) == pytest.approx((2.36 - 4 - 0.236, 2.36 + 4 + 0.236))


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
            "no row of tables/sgemm.csv: rate median where",
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
        ({HELD: 1, UNMEASURED: 2}, PARTIALLY),
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
        folder, relative_claim(), relative_claim(id="needs-two", needs={"gpus": 2}), name="paper.yaml"
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
    assert paper.paper == "a paper" and paper.verdict == PARTIALLY
    assert paper.counts == Counter({HELD: 1, UNMEASURED: 1})
    assert paper.describe_unmeasured() == "needs 2 GPUs; 1 here (needs-two)"
    page = render.markdown(outcomes, "h200", Here.of(tables, 1))
    assert (
        page.index("## Per paper")
        < page.index("## Claims of the papers")
        < page.index("## Regression checks")
    )
    assert "| a paper | **partially reproduced** | 1 | 0 | 0 | 1 | needs 2 GPUs; 1 here (needs-two) |" in page
    regression = page[page.index("## Regression checks") : page.index("## Claims in detail")]
    assert "torch SGEMM at N=8192" in regression and "1 within tolerance" in regression
    assert "torch SGEMM at N=8192" not in page[: page.index("## Regression checks")]


def test_made_tables_of_an_h100_judge_every_shipped_paper_claim() -> None:
    """No GPU of the papers here: relative claims are judged, absolute ones scaled, regression apart, and
    what needs more GPUs says so; no claim is left out because the GPU differs."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = load_claims([ROOT / "config" / "expected"], SCHEMA, hardware)
    tables = {
        "reference": pd.DataFrame(
            [
                {"gpu_name": H100, "metric": m, "statistic": "median", "value": v, "unit": u}
                for m, v, u in [
                    ("fp32_gemm", 51.0, "TFLOP/s"),
                    ("fp16_gemm", 700.0, "TFLOP/s"),
                    ("memory_bandwidth", 2900.0, "GB/s"),
                    ("power_limit", 700.0, "W"),
                ]  # fmt: skip
            ]
        ),
        "variability_summary": pd.DataFrame(
            [
                {
                    "backend": "cublas",
                    "n": 25536,
                    "scope": "gpu 0",
                    "metric": "time",
                    "statistic": "median",
                    "value": 650.0,
                    "unit": "ms",
                    "gpu_name": H100,
                }
            ]  # fmt: skip
        ),
        "hfta_speedup": pd.DataFrame(
            [
                {
                    "gpu_name": H100,
                    "workload": "resnet18",
                    "precision": "fp16",
                    "baseline": b,
                    "step": step,
                    "baseline_step": baseline_step,
                    "metric": "speedup",
                    "statistic": s,
                    "value": v,
                    "unit": "x",
                }
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
                for s in ("max", "at_best_b")
            ]  # fmt: skip
        ),
    }
    outcomes = {o.claim.id: o for o in evaluate(claims, tables, hardware, gpu_count=1)}
    assert outcomes["sc22-v100-cublas-time-per-gpu"].status == "scaled from V100 SXM2: within tolerance"
    assert outcomes["sc22-v100-node-time-spread"].detail == "needs 2 GPUs; 1 here"
    assert outcomes["hfta-speedup-over-serial"].status == DIRECTION_WITHIN
    assert outcomes["hfta-speedup-over-mps"].status == DIRECTION_WITHIN
    assert outcomes["h100-hfta-fused-over-serial-b32"].judged == "relative"
    assert outcomes["h100-hfta-graphed-fused-over-stock-mps-b32"].values == (1.55,)  # its own row
    assert outcomes["nvidia-resnet50-a100-80gb-amp-8gpu-speedup"].detail == "needs 8 GPUs; 1 here"
    assert "study ddp did not run here" in outcomes["nvidia-resnet50-v100-amp-1gpu"].detail
    for outcome in outcomes.values():
        assert "applicable" not in outcome.status
        if outcome.judged == "exact":
            pytest.fail(f"{outcome.claim.id} judged exactly on an H100")
    papers = {p.paper: p.verdict for p in paper_verdicts(list(outcomes.values()))}
    assert papers["SC22 GPU variability (Sinha et al.)"] == PARTIALLY
    assert papers["HFTA (Wang et al., MLSys'21)"] == REPRODUCED


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (claim(kind=None), "key claims.0: 'kind' is a required property (claim h200-rate)"),
        (claim(scaling=None), "key claims.0: 'scaling' is a required property (claim h200-rate)"),
        (relative_claim(direction=None), "key claims.0: 'direction' is a required property (claim speedup)"),
        (
            claim(gpu="a100"),
            "key gpu: 'a100' has no hardware entry config/hardware/a100.yaml (known: h200, v100)",
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
        (claim(expected={"value": 1, "max": 2}), "key expected: give a value, or min and/or max, not both"),
        (
            claim(tolerance={"relative": 0.1, "absolute": 1, "why": "x"}),
            "give relative or absolute, not both",
        ),
        (
            claim(measure={"table": "sgemm", "metric": "rate"}),
            "key claims.0.measure: 'statistic' is a required property",
        ),
        (claim(measure={**claim()["measure"], "reduce": "each"}, divide_by={}), "not reduce: each"),
        (claim(unit_of="ms"), "('unit_of' was unexpected); allowed keys:"),
        (
            claim(expected={"computed": "87 - 61", "max": 30}),
            "key expected: give computed alone, not with max",
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
        claim(id="v100-rate", gpu="v100", claim="a V100 reaches 10 TFLOP/s", expected={"value": 10.0}),
        relative_claim(),
        claim(id="slow", expected={"value": 80.0}),
    )
    out = tmp_path / "results" / "h200"
    tables = out / "tables"
    tables.mkdir(parents=True)
    sgemm_table([("torch", 8192, "rate", 51.0)]).to_csv(tables / "sgemm.csv", index=False)
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
    assert "verdict for profile h200: a paper: partially reproduced. Regression checks: none" in result.stderr
    verdict = pd.read_csv(out / "verdict.csv")
    assert list(verdict["status"]) == [
        WITHIN,
        "scaled from V100 SXM2: outside tolerance",
        NOT_MEASURED,
        OUTSIDE,
    ]
    assert list(verdict["grade"]) == [HELD, NOT_HELD, UNMEASURED, NOT_HELD]
    assert verdict.loc[0, "measured"] == 51.0 and verdict.loc[0, "plot"] == "plots/sgemm.png"
    assert verdict.loc[1, "scale_factor"] == pytest.approx(51.0 / 15.7)
    page = (out / "verdict.md").read_text()
    assert (
        "| ✅ | torch SGEMM at N=8192 reaches 50 TFLOP/s | absolute; measured on NVIDIA H200; paper: H200 |"
        in page
    )
    assert "[sgemm](plots/sgemm.png)" in page and "study hfta did not run here" in page
    assert "<b>scaled from V100 SXM2: outside tolerance</b>" in (out / "verdict.html").read_text()
    landing = (out / "verdict_summary.rst").read_text()
    body = publish_parts(landing, writer="html", settings_overrides={"report_level": 2, "halt_level": 2})
    assert "<strong>partially reproduced</strong>" in body["html_body"] and "a paper" in body["html_body"]
    strict = run_gpurepro(*args, "--fail-on-outside")
    assert strict.returncode == 1


def test_nvidia_claims_read_the_ddp_table() -> None:
    """On an A100 80GB the 1-GPU figure is judged exactly; on the 40GB card (not the paper's GPU) it is
    scaled by the 40GB's measured rates; the V100 figure is scaled on either."""
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = [c for c in load_claims([ROOT / "config" / "expected"], SCHEMA, hardware) if c.study == "ddp"]
    claims = [c for c in claims if c.purpose == "reproduction"]
    row = {"study": "ddp", "model": "resnet50", "precision": "fp16", "status": "ok", "statistic": "total",
           "metric": "throughput", "unit": "images/s", "gpus": 1}  # fmt: skip
    for rate, status in ((2600.0, WITHIN), (2000.0, OUTSIDE)):
        table = pd.DataFrame([{**row, "gpu_name": "NVIDIA A100-SXM4-80GB", "value": rate}])
        outcomes = {o.claim.id: o for o in evaluate(claims, {"ddp": table}, hardware, gpu_count=1)}
        assert outcomes["nvidia-resnet50-a100-80gb-amp-1gpu"].status == status
        assert outcomes["nvidia-resnet50-a100-80gb-amp-8gpu-speedup"].detail == "needs 8 GPUs; 1 here"
        assert "measured no fp16_gemm reference rate" in outcomes["nvidia-resnet50-v100-amp-1gpu"].detail
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
    assert eighty.status == "scaled from A100 80GB: within tolerance"
    assert eighty.factor == pytest.approx(((260 / 312) * (1300 / 2039)) ** 0.5)
    assert outcomes["nvidia-resnet50-v100-amp-1gpu"].status == "scaled from V100 SXM2: within tolerance"
