"""Where a claim's sides ran (verdict/sides.py): whether the points it compares shared a GPU round by
round, and what other GPUs measured beside them, from small tables and sidecars built here."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from gpurepro.verdict import render, sides
from gpurepro.verdict.claims import Claim, Selection
from gpurepro.verdict.outcome import Outcome
from gpurepro.verdict.ranges import Expected, Tolerance

A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
B = "GPU-bbbbbbbb-1111-2222-3333-444444444444"
C = "GPU-cccccccc-1111-2222-3333-444444444444"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def claim(**changes: Any) -> Claim:
    """A relative claim on the across-process DeiT table (DeiT-B over DeiT-T's latency by default)."""
    fields: dict[str, Any] = {
        "id": "test-claim",
        "purpose": "reproduction",
        "file": "claims.yaml",
        "claim": "a claim",
        "kind": "relative",
        "study": "inference",
        "gpus": ("h100-sxm5-80gb",),
        "measure": Selection("inference_deit_processes", "latency", "median", {"model": "deit-b"}),
        "expected": Expected(value=2.0),
        "tolerance": Tolerance(relative=0.1, why="test"),
        "unit": "x",
        "source": {"title": "a paper"},
        "divide_by": Selection("inference_deit_processes", "latency", "median", {"model": "deit-t"}),
    }
    fields.update(changes)
    return Claim(**fields)


def processes_table(points: dict[str, list[tuple[int, str]]]) -> pd.DataFrame:
    """An across-process table: per model, its processes' (run, GPU UUID) in `runs`/`gpu_uuids`."""
    rows = []
    for model, processes in points.items():
        rows.append(
            {
                "study": "inference",
                "model": model,
                "batch_size": 1,
                "metric": "latency",
                "per_process": "median",
                "statistic": "median",
                "value": 3.0,
                "unit": "ms",
                "runs": ",".join(str(run) for run, _ in processes),
                "gpu_uuids": ",".join(gpu for _, gpu in processes),
            }
        )
    return pd.DataFrame(rows)


def write_sidecar(
    results: Path, name: str, gpu: str, workload: dict[str, Any], start_s: float, end_s: float
) -> None:
    path = results / name
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "gpus": [{"name": "NVIDIA H100", "uuid": gpu}] if gpu else [],
        "workload": workload,
        "start_time": (T0 + timedelta(seconds=start_s)).isoformat(),
        "end_time": (T0 + timedelta(seconds=end_s)).isoformat(),
    }
    path.write_text(json.dumps(record))


def test_sides_on_one_gpu_in_every_round_and_on_different_gpus_in_one() -> None:
    shared = {"deit-t": [(1, A), (2, B)], "deit-b": [(1, A), (2, B)]}
    tables = {"inference_deit_processes": processes_table(shared)}
    found = sides.sides_of(claim(), tables)
    assert [side.label for side in found] == ["model=deit-b", "model=deit-t"]
    assert sides.sharing(found, run_gpus={A, B}) == (
        "both sides on one GPU in every round (GPU-aaaaaaaa, GPU-bbbbbbbb)"
    )

    moved = {"deit-t": [(1, A), (2, A)], "deit-b": [(1, A), (2, B)]}
    found = sides.sides_of(claim(), {"inference_deit_processes": processes_table(moved)})
    assert sides.sharing(found, run_gpus={A, B}) == (
        "sides on different GPUs in round 2: model=deit-b GPU-bbbbbbbb, model=deit-t GPU-aaaaaaaa"
    )
    # a run with one GPU says so, whatever the rounds
    assert sides.sharing(found, run_gpus={A}) == "one GPU in the run (GPU-aaaaaaaa)"


def test_a_table_without_uuids_reads_as_unknown_and_a_study_table_as_one_process_a_row() -> None:
    old = processes_table({"deit-t": [(1, "")], "deit-b": [(1, "")]}).drop(columns=["gpu_uuids"])
    found = sides.sides_of(claim(), {"inference_deit_processes": old})
    assert sides.sharing(found, run_gpus={A, B}) == (
        "GPUs of its processes not recorded (tables aggregated before the UUID columns)"
    )
    assert sides.sharing(found, run_gpus=set()) == "no GPU in the run (the CPU)"
    # no rows read (the table is absent): nothing to say
    assert sides.sharing(sides.sides_of(claim(), {}), run_gpus={A, B}) == ""

    study = pd.DataFrame(
        [
            {"study": "inference", "model": m, "run": run, "gpu_uuid": gpu, "metric": "latency",
             "statistic": "median", "value": 3.0, "unit": "ms"}
            for m, run, gpu in [("deit-t", 1, A), ("deit-b", 1, A), ("deit-t", 2, A), ("deit-b", 2, C)]
        ]
    )  # fmt: skip
    on_study = claim(
        measure=Selection("inference_deit", "latency", "median", {"model": "deit-b"}, reduce="median"),
        divide_by=Selection("inference_deit", "latency", "median", {"model": "deit-t"}, reduce="median"),
    )
    found = sides.sides_of(on_study, {"inference_deit": study})
    assert sides.sharing(found, run_gpus={A, B}).startswith("sides on different GPUs in round 2: ")


def test_a_speedup_row_has_a_baseline_side_and_a_scaled_claim_the_reference_rates() -> None:
    speedup = pd.DataFrame(
        [{"study": "hfta", "workload": "resnet18", "precision": "fp16", "mode": "hfta", "step": "stock",
          "baseline": "serial", "baseline_step": "stock", "b": 32, "baseline_b": 1, "metric": "speedup",
          "statistic": "max", "value": 9.6, "unit": "x", "runs": "1,2", "gpu_uuids": f"{A},{A}",
          "baseline_runs": "1,2", "baseline_gpu_uuids": f"{A},{B}"}]
    )  # fmt: skip
    on_speedup = claim(
        study="hfta",
        measure=Selection("hfta_speedup", "speedup", "max", {"workload": "resnet18", "baseline": "serial"}),
        divide_by=None,
    )
    found = sides.sides_of(on_speedup, {"hfta_speedup": speedup})
    assert [side.label for side in found] == ["b=32, mode=hfta", "b=1, mode=serial"]
    assert sides.sharing(found, run_gpus={A, B}) == (
        "sides on different GPUs in round 2: b=32, mode=hfta GPU-aaaaaaaa, b=1, mode=serial GPU-bbbbbbbb"
    )

    # an absolute claim scaled by the reference rates: measured once, beside every round of the others
    sgemm = pd.DataFrame(
        [{"study": "sgemm", "backend": "cublas", "n": 8192, "gpu_uuid": A, "metric": "rate",
          "statistic": "median", "value": 50.0, "unit": "TFLOP/s"}]
    )  # fmt: skip
    reference = pd.DataFrame(
        [{"study": "reference", "gpu_uuid": B, "metric": "fp32_gemm", "statistic": "median", "value": 51.0,
          "unit": "TFLOP/s"}]
    )  # fmt: skip
    absolute = claim(
        kind="absolute", study="sgemm", divide_by=None,
        measure=Selection("sgemm", "rate", "median", {"backend": "cublas", "n": 8192}),
    )  # fmt: skip
    tables = {"sgemm": sgemm, "reference": reference}
    found = sides.sides_of(absolute, tables, scaled=True)
    assert [side.label for side in found][-1] == "reference rates"
    assert "reference rates GPU-bbbbbbbb" in sides.sharing(found, run_gpus={A, B})
    assert len(sides.sides_of(absolute, tables, scaled=False)) == 1


def test_what_ran_beside_a_sides_processes_comes_from_the_sidecars_times(tmp_path: Path) -> None:
    results = tmp_path / "h100"
    point = {"family": "deit", "batch_size": 1}
    for run, start in ((1, 0), (2, 100)):
        for model, offset in (("deit-t", 0), ("deit-b", 20)):
            write_sidecar(
                results, f"inference/raw/deit/{model}_b1_run{run}.provenance.json", A,
                {**point, "model": model, "run": run}, start + offset, start + offset + 15,
            )  # fmt: skip
    # on another GPU: an HFTA job overlapping DeiT-B's second process, and one after everything
    write_sidecar(results, "hfta/raw/r18/stock/hfta_b32_run2.provenance.json", B, {"run": 2}, 125, 130)
    write_sidecar(results, "hfta/raw/r18/stock/hfta_b32_run3.provenance.json", B, {"run": 3}, 500, 510)
    # a telemetry trace's sidecar is not a job
    write_sidecar(results, "hfta/raw/r18/stock/x.telemetry.provenance.json", C, {"run": 2}, 0, 1000)
    (results / "placement.json").write_text(json.dumps({"gpus": [0, 1], "groups": {}}))

    jobs = sides.jobs_of(results)
    assert len(jobs) == 6 and {job.study for job in jobs} == {"inference", "hfta"}
    tables = {
        "inference_deit_processes": processes_table({"deit-t": [(1, A), (2, A)], "deit-b": [(1, A), (2, A)]})
    }
    found = sides.sides_of(claim(), tables)
    assert sides.beside(found, jobs, sides.placement_gpus(results)) == (
        "beside them: 1 job on GPU-bbbbbbbb (hfta 1) (claim groups placed over GPUs 0, 1: placement.json)"
    )
    # the same processes alone on the node
    alone = [job for job in jobs if job.study == "inference"]
    assert sides.beside(found, alone, []) == "beside them: nothing else measured at the same time"
    # processes on a GPU the sidecars never name: their times are unknown
    elsewhere = processes_table({"deit-t": [(1, C)], "deit-b": [(1, C)]})
    found = sides.sides_of(claim(), {"inference_deit_processes": elsewhere})
    assert sides.beside(found, jobs, []) == "beside them: no provenance times found for its processes"


def test_the_verdict_shows_the_line_in_its_details_and_csv(tmp_path: Path) -> None:
    tables = {"inference_deit_processes": processes_table({"deit-t": [(1, A)], "deit-b": [(1, A)]})}
    outcome = Outcome(claim(), "consistent", "a detail", "relative")
    [described] = sides.described([outcome], tables, tmp_path)  # no sidecars here
    assert described.sides == (
        "one GPU in the run (GPU-aaaaaaaa); beside them: no provenance times found for its processes"
    )
    assert render.frame([described])["sides"].iloc[0] == described.sides
    assert f"- GPUs of its sides: {described.sides}" in "\n".join(render._details([described]))


def _rates_by_gpu(**fp32_by_gpu: float) -> pd.DataFrame:
    """tables/reference.csv of a placed run: each GPU's FP32 GEMM median (keys: the GPU's UUID)."""
    return pd.DataFrame(
        [
            {"study": "reference", "device": str(i), "gpu_uuid": gpu, "metric": "fp32_gemm",
             "statistic": "median", "value": value, "unit": "TFLOP/s"}
            for i, (gpu, value) in enumerate(fp32_by_gpu.items())
        ]
    )  # fmt: skip


def _absolute_on(*processes: tuple[int, str]) -> tuple[Claim, dict[str, pd.DataFrame]]:
    """An absolute claim on an across-process table whose point ran `processes` (run, GPU UUID)."""
    absolute = claim(
        kind="absolute", divide_by=None,
        measure=Selection("inference_deit_processes", "latency", "median", {"model": "deit-b"}),
    )  # fmt: skip
    return absolute, {"inference_deit_processes": processes_table({"deit-b": list(processes)})}


def test_a_scaled_claim_takes_the_reference_rates_of_its_own_gpu_and_reads_as_on_one_gpu() -> None:
    """Under placement each GPU measured its rates: a claim whose points ran on B is scaled by B's, and
    the reference side adds no card of its own (issue 60, item 5)."""
    absolute, tables = _absolute_on((1, B), (2, B))
    tables["reference"] = _rates_by_gpu(**{A: 40.0, B: 20.0})
    rates = sides.claim_references(absolute, tables)
    assert rates.rates == {"fp32_gemm": 20.0} and rates.own and rates.gpus == (B,)
    assert rates.where == "on its GPU GPU-bbbbbbbb"
    found = sides.sides_of(absolute, tables, scaled=True)
    assert found[-1].processes == (sides.Process(sides.EVERY_ROUND, B),) and found[-1].own_gpus
    assert sides.sharing(found, run_gpus={A, B}) == (
        "its processes on one GPU (GPU-bbbbbbbb); reference rates of the same GPU"
    )

    # points that moved between cards: the median of those cards' rates, said so
    absolute, tables = _absolute_on((1, A), (2, B))
    tables["reference"] = _rates_by_gpu(**{A: 40.0, B: 20.0, C: 100.0})
    rates = sides.claim_references(absolute, tables)
    assert rates.rates == {"fp32_gemm": 30.0}
    assert rates.where == "on its 2 GPUs (the median of GPU-aaaaaaaa, GPU-bbbbbbbb)"
    assert sides.sharing(sides.sides_of(absolute, tables, scaled=True), run_gpus={A, B, C}) == (
        "its processes on 2 GPUs (GPU-aaaaaaaa, GPU-bbbbbbbb); "
        "reference rates: the median of the same 2 GPUs'"
    )


def test_without_uuids_or_a_reference_row_of_its_gpu_a_claim_takes_the_whole_table() -> None:
    """Older results: rows that name no GPU, or reference rates measured on another card only, give the
    whole table's median as before, and the words say which and why."""
    absolute, tables = _absolute_on((1, ""))
    tables["reference"] = _rates_by_gpu(**{A: 40.0, B: 20.0})
    rates = sides.claim_references(absolute, tables)
    assert rates.rates == {"fp32_gemm": 30.0} and not rates.own and rates.gpus == (A, B)
    assert rates.where == "here (the median of the run's 2 GPUs: its rows name no GPU)"

    absolute, tables = _absolute_on((1, C))
    tables["reference"] = _rates_by_gpu(**{A: 40.0})
    rates = sides.claim_references(absolute, tables)
    assert rates.rates == {"fp32_gemm": 40.0} and not rates.own
    assert rates.where == "here (GPU-aaaaaaaa's: no reference rates of its GPU GPU-cccccccc)"
    found = sides.sides_of(absolute, tables, scaled=True)
    assert sides.sharing(found, run_gpus={A, C}) == (
        "sides on different GPUs in round 1: side 1 GPU-cccccccc, reference rates GPU-aaaaaaaa"
    )

    old = _rates_by_gpu(**{A: 40.0}).drop(columns=["gpu_uuid"])  # older than the UUID columns
    assert sides.claim_references(absolute, {**tables, "reference": old}).where == (
        "here (the run's rates: no reference rates of its GPU GPU-cccccccc)"
    )
    # one GPU's rates and nothing else to choose: "here", as before rates per GPU
    absolute, tables = _absolute_on((1, A))
    tables["reference"] = _rates_by_gpu(**{A: 40.0})
    assert sides.claim_references(absolute, tables).where == "here"
    assert sides.claim_references(absolute, {}).rates == {}
