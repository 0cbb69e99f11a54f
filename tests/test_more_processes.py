"""More processes where a claim needs them: every point a judged claim reads is brought to three
processes, an inconclusive claim's noisier side gets one more a round until the claim resolves, and the
budget ends the rounds. Judged on made HFTA tables with the real verdict and the real command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from gpurepro import process_table
from gpurepro.cli import main
from gpurepro.hardware import load_hardware
from gpurepro.hfta_study.summary import PROCESS_KEYS, speedups
from gpurepro.more_processes import Budget, Point, next_round
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.rejudge import judge_tables
from tests.test_verdict import hardware_dir, relative_claim, write_claims  # noqa: F401 (a fixture)

SERIAL = (("b", "1"), ("net", "resnet18"), ("precision", "fp16"), ("scheme", "serial"), ("step", "stock"))
FUSED = (("b", "32"), ("net", "resnet18"), ("precision", "fp16"), ("scheme", "hfta"), ("step", "stock"))


def point(wildcards: tuple, runs: int, gsd: float = math.nan) -> Point:
    return Point("hfta", wildcards, tuple(range(1, runs + 1)), gsd)


def test_a_point_below_three_processes_gets_one_whether_or_not_its_claim_is_resolved() -> None:
    short, full = point(SERIAL, 2, 1.1), point(FUSED, 3, 1.01)
    chosen = next_round([], Budget(per_point=10), read=[[short, full]])
    assert [p.wildcards for p in chosen] == [SERIAL] and chosen[0].next_run()["run"] == 3


def test_an_inconclusive_claim_gives_its_noisier_side_one_more_process() -> None:
    noisy, quiet = point(SERIAL, 3, 1.12), point(FUSED, 3, 1.02)
    assert [p.wildcards for p in next_round([[quiet, noisy]], Budget(per_point=10))] == [SERIAL]


def test_the_budget_ends_the_rounds() -> None:
    noisy, quiet = point(SERIAL, 6, 1.12), point(FUSED, 4, 1.02)
    assert [p.wildcards for p in next_round([[noisy, quiet]], Budget(per_point=6))] == [FUSED]
    assert next_round([[point(SERIAL, 6), point(FUSED, 6)]], Budget(per_point=6)) == []
    assert next_round([[noisy]], Budget(per_point=10, extra=3, spent=3)) == []


def _hfta_rows(rates: dict[str, list[float]]) -> pd.DataFrame:
    """One throughput row per process of each mode: serial at B=1, MPS and the fused array at B=32."""
    rows = []
    for mode, values in rates.items():
        for run, value in enumerate(values, start=1):
            rows.append({
                "study": "hfta", "profile": "h100", "device": "0", "gpu_name": "NVIDIA H100 80GB HBM3",
                "workload": "resnet18", "batch_size": 128, "image_size": 64, "seq_len": 128,
                "precision": "fp16", "mode": mode, "step": "stock", "b": 1 if mode == "serial" else 32,
                "run": run, "status": "ok", "reason": "", "metric": "throughput", "statistic": "value",
                "value": value, "unit": "samples/s",
            })  # fmt: skip
    return pd.DataFrame(rows)


def _round(
    folder: Path, rates: dict[str, list[float]], claims: Path, hardware: Path, k: int, *more: str
) -> dict:
    """Write the HFTA tables as they stand and run one round of `gpurepro more-processes` on them (`more`:
    further options)."""
    table = _hfta_rows(rates)
    paths = {
        "hfta": table,
        "hfta_speedup": speedups(table),
        "hfta_processes": process_table.summarise(table, PROCESS_KEYS),
    }
    tables = folder / f"round{k}"
    tables.mkdir()
    for name, frame in paths.items():
        frame.to_csv(tables / f"{name}.csv", index=False)
    earlier = [str(folder / f"round{j}.json") for j in range(1, k)]
    plan = folder / f"round{k}.json"
    args = ["more-processes", "--study", "hfta", "--claims", str(claims), "--hardware", str(hardware)]
    args += ["--tables", *(str(p) for p in sorted(tables.iterdir())), "--per-point", "10", "--out", str(plan)]
    assert main([*args, *more, "--earlier", *earlier]) == 0
    return json.loads(plan.read_text())


def _mps_speedup_claim(folder: Path) -> Path:
    claim = relative_claim(
        measure={
            "table": "hfta_speedup", "metric": "speedup", "statistic": "max", "reduce": "each",
            "where": {"baseline": "mps", "step": "stock", "baseline_step": "stock"},
            "interval": {"low": "max_ci_low", "high": "max_ci_high"},
        },
        tolerance={"relative": 0.0, "why": "made tables"},
    )  # fmt: skip
    return write_claims(folder / "claims", claim)


def test_an_inconclusive_claim_gets_processes_and_then_resolves(tmp_path: Path, hardware_dir: Path) -> None:  # noqa: F811
    """A speedup near 2x over MPS, claimed 2-4x: over three noisy MPS processes its interval straddles 2,
    so MPS (the noisier side) gets a fourth process; once the interval clears 2 the claim is resolved and
    the rounds end. (Over serial B=1, a host-paced side, more processes would not do: its magnitude
    reads host-dependent, and the spread between machines does not shrink with processes.)"""
    claims = _mps_speedup_claim(tmp_path)
    rates = {"mps": [43_000.0, 52_000.0, 36_000.0], "hfta": [86_000.0, 85_600.0, 86_400.0]}
    first = _round(tmp_path, rates, claims, hardware_dir, 1)
    assert first["inconclusive"] == ["speedup"]
    assert [p["wildcards"] for p in first["points"]] == [
        {"b": "32", "net": "resnet18", "precision": "fp16", "scheme": "mps", "step": "stock", "run": 4}
    ]
    # after more rounds the MPS processes agree: the interval narrows above 2
    rates["mps"] = [40_000.0, 40_600.0, 40_200.0, 40_400.0]
    rates["hfta"] += [86_000.0]
    second = _round(tmp_path, rates, claims, hardware_dir, 2)
    assert second["inconclusive"] == [] and second["points"] == []


def _inference_round(folder: Path, family: str, rows: list[dict]) -> dict:
    """A quick run's first round of `gpurepro more-processes` for one inference family (deit, bert), on a
    made study table of its processes (`rows`) and the across-process table made from it, with the
    project's own claims: 6 processes a point, 1 extra in all."""
    study = pd.DataFrame(rows)
    keys = ["gpu_name", "family", "model", "seq_len", "batch_size", "precision", "mode"]
    tables = [folder / f"inference_{family}.csv", folder / f"inference_{family}_processes.csv"]
    study.to_csv(tables[0], index=False)
    process_table.summarise(study, keys).to_csv(tables[1], index=False)
    out = folder / "round1.json"
    root = Path(__file__).resolve().parents[1]
    main([
        "more-processes", "--study", "inference", "--tables", *map(str, tables),
        "--claims", str(root / "config" / "expected"), "--hardware", str(root / "config" / "hardware"),
        "--gpus", "1", "--per-point", "6", "--extra", "1", "--out", str(out),
    ])  # fmt: skip
    return json.loads(out.read_text())


def test_the_noisier_side_is_told_by_the_figure_the_claim_reads(tmp_path: Path) -> None:
    """DeiT's power order, as a second quick run on one H100 measured it: each process's power at its own
    pace spreads most for DeiT-B (the host ran one of its processes 1.7x faster), but the claim reads power
    at each point's median pace, where DeiT-S spreads most (one process drew 0.076 J an inference against
    0.049-0.050). The extra process goes to DeiT-S, the side that keeps the order inconclusive."""
    own_pace = {"deit-t": [4.95, 6.11, 4.23], "deit-s": [11.97, 12.74, 11.97], "deit-b": [18.9, 31.5, 21.8]}
    median_pace = {
        "deit-t": [4.95, 5.57, 5.16], "deit-s": [18.61, 12.25, 11.97], "deit-b": [21.2, 20.9, 21.7]
    }  # fmt: skip
    rows = [
        {"gpu_name": "NVIDIA H100 80GB HBM3", "family": "deit", "model": model, "seq_len": math.nan,
         "batch_size": 1, "precision": "fp16", "mode": "eager", "run": run, "status": "ok", "reason": "",
         "metric": "power_above_active_idle", "statistic": statistic, "value": value, "unit": "W"}
        for statistic, figures in (("mean", own_pace), ("at_median_pace", median_pace))
        for model, values in figures.items()
        for run, value in enumerate(values, start=1)
    ]  # fmt: skip
    plan = _inference_round(tmp_path, "deit", rows)
    assert "deit-power-order" in plan["inconclusive"]
    assert [p["wildcards"]["vit_model"] for p in plan["points"]] == ["deit-s"]


def test_an_orderings_extra_process_goes_to_the_step_it_could_not_resolve(tmp_path: Path) -> None:
    """BERT's power order, as a fresh quick run on one H100 measured it before its extra round: BERT-B at
    sequence 128 spreads most (one process drew 7.3 W against 11.7-11.9), but its step to BERT-B s384
    resolved ([5.2, 18.6] W); the step from s384 to BERT-L did not ([-4.0, 9.0] W). The extra process
    goes to s384, the noisier point of that step, not to s128."""
    median_pace = {
        ("bert-b", 128): [11.91, 7.26, 11.74], ("bert-b", 384): [20.96, 25.81, 19.80],
        ("bert-l", 320): [24.08, 26.90, 23.13],
    }  # fmt: skip
    rows = [
        {"gpu_name": "NVIDIA H100 80GB HBM3", "family": "bert", "model": model, "seq_len": seq,
         "batch_size": 1, "precision": "fp16", "mode": "eager", "run": run, "status": "ok", "reason": "",
         "metric": "power_above_active_idle", "statistic": "at_median_pace", "value": value, "unit": "W"}
        for (model, seq), values in median_pace.items()
        for run, value in enumerate(values, start=1)
    ]  # fmt: skip
    plan = _inference_round(tmp_path, "bert", rows)
    assert plan["inconclusive"] == ["bert-power-order"]
    assert [(p["wildcards"]["bert_model"], p["wildcards"]["seq"]) for p in plan["points"]] == [
        ("bert-b", "384")
    ]


def test_each_round_is_a_look_at_the_level_the_spending_allows(tmp_path: Path, hardware_dir: Path) -> None:  # noqa: F811
    """The same tables judged once (no rounds: one look, at 95%) resolve the speedup over MPS, claimed
    2-4x; judged as the first of eight looks (seven rounds, Pocock-type spending of 5%) its interval is
    built at 97.9% and straddles 2, so MPS gets a fourth process. The plan records the look."""
    rates = {"mps": [40_000.0, 41_500.0, 40_600.0], "hfta": [86_000.0, 85_600.0, 86_400.0]}
    once = tmp_path / "once"
    once.mkdir()
    assert _round(once, rates, _mps_speedup_claim(once), hardware_dir, 1)["inconclusive"] == []
    looked = tmp_path / "looked"
    looked.mkdir()
    plan = _round(looked, rates, _mps_speedup_claim(looked), hardware_dir, 1, "--rounds", "7")
    assert plan["inconclusive"] == ["speedup"]
    assert [p["wildcards"]["scheme"] for p in plan["points"]] == ["mps"]
    assert plan["look"] == 1 and plan["spending"] == "pocock" and len(plan["levels"]) == 8
    assert plan["confidence"] == plan["levels"][0] and 0.97 < plan["confidence"] < 0.99


def test_the_verdict_reads_the_folders_last_look(tmp_path: Path, hardware_dir: Path) -> None:  # noqa: F811
    """The run's verdict judges a family's claims at the look its round plans record: the speedup over
    MPS that one look at 95% resolves reads inconclusive where the folder's plan says a round ran after
    look 1 (so the final tables stand at look 2, 98.72%), and its detail names the look."""
    rates = {"mps": [40_000.0, 41_500.0, 40_600.0], "hfta": [86_000.0, 85_600.0, 86_400.0]}
    results = tmp_path / "results"
    plans = results / "more_processes" / "hfta"
    plans.mkdir(parents=True)
    _round(plans, rates, _mps_speedup_claim(tmp_path), hardware_dir, 1, "--rounds", "7")
    table = _hfta_rows(rates)
    tables = {"hfta_speedup": speedups(table), "hfta_processes": process_table.summarise(table, PROCESS_KEYS)}
    hardware = load_hardware(hardware_dir)
    claims = load_claims([_mps_speedup_claim(tmp_path / "again")], None, hardware)
    (once,) = judge_tables(claims, tables, hardware, None, gpus=1)
    (looked,) = judge_tables(claims, tables, hardware, results, gpus=1)
    assert not once.inconclusive and looked.inconclusive
    assert "look 2 of at most 8: intervals at 98.72%" in looked.detail
