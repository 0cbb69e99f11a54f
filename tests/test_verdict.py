"""The reproduction verdict: claim files are checked with errors that name the file, claim and key; each
claim ends within or outside tolerance, not applicable on this GPU (other profile or GPU variant) or not
measured (no table, no row, ambiguous); the CLI writes Markdown, CSV and HTML."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from gpurepro.errors import GpureproError
from gpurepro.verdict.claims import load_claims
from gpurepro.verdict.evaluate import NOT_APPLICABLE, NOT_MEASURED, OUTSIDE, WITHIN, evaluate

from .conftest import ROOT, run_gpurepro

SCHEMA = ROOT / "workflow" / "schemas" / "claims.schema.yaml"


def claim(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "h200-rate",
        "claim": "torch SGEMM at N=8192 reaches 50 TFLOP/s",
        "study": "sgemm",
        "profiles": ["h200"],
        "measure": {
            "table": "sgemm",
            "metric": "rate",
            "statistic": "median",
            "where": {"backend": "torch", "n": 8192},
        },
        "expected": {"value": 50.0},
        "tolerance": {"relative": 0.1, "why": "another card"},
        "unit": "TFLOP/s",
        "plot": "sgemm",
    }
    base.update(changes)
    return base


def write_claims(folder: Path, *claims: dict[str, Any], name: str = "claims.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump({"source": {"title": "a paper"}, "claims": list(claims)}))
    return path


def sgemm_table(rows: list[tuple[str, int, str, float]], gpu: str = "NVIDIA H200") -> pd.DataFrame:
    """Long sgemm rows: (backend, n, metric, value) with the statistic median."""
    units = {"rate": "TFLOP/s", "time": "ms"}
    return pd.DataFrame(
        [
            {
                "profile": "h200",
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


def outcome_of(tmp_path: Path, spec: dict[str, Any], tables: dict[str, pd.DataFrame], profile: str = "h200"):
    (result,) = evaluate(load_claims([write_claims(tmp_path, spec)], SCHEMA), profile, tables)
    return result


def test_the_shipped_claim_files_load() -> None:
    claims = load_claims([ROOT / "config" / "expected"], SCHEMA)
    ids = {c.id for c in claims}
    assert {"sc22-v100-cublas-time-per-gpu", "h200-cublas-rate-n8192", "hfta-speedup-over-serial"} <= ids
    assert {"deit-b-a100-latency-bs1-amp", "h100-sxm-cublas-rate-n8192"} <= ids
    assert all(c.source.get("title") and c.tolerance.why for c in claims)


@pytest.mark.parametrize(
    ("value", "status"),
    [(50.0, WITHIN), (45.0, WITHIN), (55.0, WITHIN), (44.9, OUTSIDE), (55.1, OUTSIDE)],
)
def test_relative_tolerance_around_a_value(tmp_path: Path, value: float, status: str) -> None:
    result = outcome_of(tmp_path, claim(), {"sgemm": sgemm_table([("torch", 8192, "rate", value)])})
    assert result.status == status
    assert result.measured == pytest.approx(value)
    assert "accepted 45 to 55 TFLOP/s" in result.detail


def test_a_range_widened_by_the_tolerance_and_every_gpu_checked(tmp_path: Path) -> None:
    spec = claim(
        measure={
            "table": "sgemm",
            "metric": "time",
            "statistic": "median",
            "where": {"n": 25536},
            "reduce": "each",
        },
        expected={"min": 2262, "max": 2326},
        tolerance={"relative": 0.05, "why": "another node"},
        unit="ms",
    )
    within = [("cublas", 25536, "time", 2150.0), ("cublas", 25536, "time", 2440.0)]
    result = outcome_of(tmp_path, spec, {"sgemm": sgemm_table(within)})
    assert result.status == WITHIN and result.claim.accepted_range() == pytest.approx((2148.9, 2442.3))
    assert result.describe_measured() == "2150–2440 ms (2 values)"
    one_slow = [("cublas", 25536, "time", 2300.0), ("cublas", 25536, "time", 2450.0)]
    result = outcome_of(tmp_path, spec, {"sgemm": sgemm_table(one_slow)})
    assert result.status == OUTSIDE and result.measured == 2450.0


def test_absolute_tolerance_and_one_sided_bound(tmp_path: Path) -> None:
    spread = claim(expected={"max": 22}, tolerance={"absolute": 0, "why": "worst case"}, unit="ms")
    spread["measure"]["metric"] = "time"
    table = {"sgemm": sgemm_table([("torch", 8192, "time", 21.9)])}
    assert outcome_of(tmp_path, spread, table).status == WITHIN
    table = {"sgemm": sgemm_table([("torch", 8192, "time", 22.1)])}
    assert outcome_of(tmp_path, spread, table).status == OUTSIDE
    near = claim(expected={"value": 1.18}, tolerance={"absolute": 2.0, "why": "two cards"}, unit="ms")
    near["measure"]["metric"] = "time"
    low, high = load_claims([write_claims(tmp_path, near)], SCHEMA)[0].accepted_range()
    assert (low, high) == pytest.approx((-0.82, 3.18))


def test_a_ratio_of_two_selections(tmp_path: Path) -> None:
    spec = claim(
        measure={
            "table": "sgemm",
            "metric": "rate",
            "statistic": "median",
            "where": {"backend": "tiled", "n": 8192},
        },
        divide_by={"where": {"backend": "cublas"}},
        expected={"value": 0.921},
        tolerance={"relative": 0.05, "why": "same card"},
        unit="x",
    )
    rows = [("tiled", 8192, "rate", 47.09), ("cublas", 8192, "rate", 51.16), ("cublas", 4096, "rate", 40.0)]
    result = outcome_of(tmp_path, spec, {"sgemm": sgemm_table(rows)})
    assert result.status == WITHIN and result.measured == pytest.approx(47.09 / 51.16)


def test_other_profiles_and_gpu_variants_are_not_applicable(tmp_path: Path) -> None:
    table = {"sgemm": sgemm_table([("torch", 8192, "rate", 10.0)])}
    result = outcome_of(tmp_path, claim(), table, profile="v100")
    assert result.status == NOT_APPLICABLE and "claim is for profile h200; this run is v100" in result.detail
    sxm = claim(profiles=["h100"], gpu_name="H100.*(HBM3|SXM)")
    pcie = {"sgemm": sgemm_table([("torch", 8192, "rate", 38.0)], gpu="NVIDIA H100 PCIe")}
    result = outcome_of(tmp_path, sxm, pcie, profile="h100")
    assert result.status == NOT_APPLICABLE and "NVIDIA H100 PCIe" in result.detail
    hbm3 = {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)], gpu="NVIDIA H100 80GB HBM3")}
    assert outcome_of(tmp_path, sxm, hbm3, profile="h100").status == WITHIN


@pytest.mark.parametrize(
    ("tables", "why"),
    [
        ({}, "no tables/sgemm.csv in this run (study sgemm did not run here)"),
        (
            {"sgemm": sgemm_table([("torch", 4096, "rate", 50.0)])},
            "no row of tables/sgemm.csv: rate median where",
        ),
        (
            {"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)]).drop(columns="backend")},
            "has no column backend",
        ),
        ({"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)] * 2)}, "2 rows of tables/sgemm.csv"),
        ({"sgemm": sgemm_table([("torch", 8192, "rate", math.nan)])}, "has no value"),
        ({"sgemm": sgemm_table([("torch", 8192, "rate", 50.0)]).assign(unit="GFLOP/s")}, "is in GFLOP/s"),
    ],
)
def test_not_measured_says_why(tmp_path: Path, tables: dict[str, pd.DataFrame], why: str) -> None:
    result = outcome_of(tmp_path, claim(), tables)
    assert result.status == NOT_MEASURED and why in result.detail, result.detail


def test_string_filters_are_patterns(tmp_path: Path) -> None:
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
            {"scope": s, "metric": "time", "statistic": "median", "value": v, "unit": "ms"}
            for s, v in [("gpu 0", 49.0), ("gpu 1", 51.0), ("across gpus", 99.0)]
        ]
    )
    result = outcome_of(tmp_path, spec, {"summary": summary})
    assert result.status == WITHIN and result.measured == 51.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
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
        (claim(profiles="h200"), "key claims.0.profiles: 'h200' is not of type 'array'"),
        (claim(gpu_name="H100("), "key gpu_name: not a regular expression"),
        (claim(measure={**claim()["measure"], "reduce": "each"}, divide_by={}), "not reduce: each"),
        (claim(unit_of="ms"), "('unit_of' was unexpected); allowed keys:"),
    ],
)
def test_bad_claim_files_name_the_file_and_key(tmp_path: Path, spec: dict[str, Any], message: str) -> None:
    path = write_claims(tmp_path, spec)
    with pytest.raises(GpureproError) as err:
        load_claims([tmp_path], SCHEMA)
    assert f"bad claim file {path}" in str(err.value) and message in str(err.value), str(err.value)


def test_claim_ids_are_unique_across_files(tmp_path: Path) -> None:
    write_claims(tmp_path, claim(), name="a.yaml")
    write_claims(tmp_path, claim(), name="b.yaml")
    with pytest.raises(GpureproError, match=r"claim id 'h200-rate' is already used in .*a\.yaml"):
        load_claims([tmp_path], SCHEMA)


def test_a_claim_without_any_source_fails(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"claims": [claim()]}))
    with pytest.raises(GpureproError, match="key source: no source title"):
        load_claims([tmp_path], SCHEMA)


def test_cli_writes_markdown_csv_and_html(tmp_path: Path) -> None:
    claims = write_claims(
        tmp_path / "expected",
        claim(),
        claim(id="v100-rate", profiles=["v100"]),
        claim(id="hfta", study="hfta", measure={"table": "hfta", "metric": "speedup", "statistic": "max"}),
        claim(id="slow", expected={"value": 80.0}),
    )
    tables = tmp_path / "results" / "h200" / "tables"
    tables.mkdir(parents=True)
    sgemm_table([("torch", 8192, "rate", 51.0)]).to_csv(tables / "sgemm.csv", index=False)
    plot = tmp_path / "results" / "h200" / "plots" / "sgemm.png"
    plot.parent.mkdir()
    plot.write_bytes(b"png")
    out = tmp_path / "results" / "h200"
    args = [
        "verdict",
        "--profile",
        "h200",
        "--claims",
        str(claims),
        "--schema",
        str(SCHEMA),
        "--tables",
        str(tables / "sgemm.csv"),
        "--plots",
        str(plot),
        "--md",
        str(out / "verdict.md"),
        "--csv",
        str(out / "verdict.csv"),
        "--html",
        str(out / "verdict.html"),
    ]
    result = run_gpurepro(*args)
    assert result.returncode == 0, result.stderr
    assert (
        "1 within tolerance, 1 outside tolerance, 1 not measured, 1 not applicable on this GPU"
        in result.stderr
    )
    verdict = pd.read_csv(out / "verdict.csv")
    assert list(verdict["status"]) == [WITHIN, NOT_MEASURED, OUTSIDE, NOT_APPLICABLE]
    assert verdict.loc[0, "measured"] == 51.0 and verdict.loc[0, "plot"] == "plots/sgemm.png"
    page = (out / "verdict.md").read_text()
    assert "| ✅ | torch SGEMM at N=8192 reaches 50 TFLOP/s | 50 TFLOP/s (±10%) | 51 TFLOP/s |" in page
    assert "[sgemm](plots/sgemm.png)" in page and "study hfta did not run here" in page
    assert "<td><b>outside tolerance</b>" in (out / "verdict.html").read_text()
    strict = run_gpurepro(*args[:-6], "--fail-on-outside")
    assert strict.returncode == 1
