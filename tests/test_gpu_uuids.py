"""Each process's GPU UUID travels into the summary rows (issue 60): the across-process tables and the
HFTA speedups name each process's GPU beside its run, and `gpurepro compare` keeps them and says where
two runs' rows come from different GPUs; tables older than the columns read as unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from gpurepro import process_table
from gpurepro.compare import match, render
from gpurepro.compare.runs import load_run
from gpurepro.hfta_study.summary import speedups

A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
B = "GPU-bbbbbbbb-1111-2222-3333-444444444444"


def _latency(model: str, run: int, gpu: str | None, value: float, status: str = "ok") -> dict[str, Any]:
    return {"study": "inference", "profile": "h100", "gpu_name": "NVIDIA H100", "gpu_uuid": gpu,
            "model": model, "run": run, "status": status, "reason": "", "metric": "latency",
            "statistic": "median", "value": value, "unit": "ms"}  # fmt: skip


def test_the_across_process_table_names_each_processs_gpu_in_the_order_of_its_runs() -> None:
    table = pd.DataFrame(
        [_latency("deit-b", 2, B, 3.1), _latency("deit-b", 1, A, 3.0), _latency("deit-b", 3, A, 2.9),
         _latency("deit-b", 4, B, 9.9, status="failed")]
    )  # fmt: skip
    summary = process_table.summarise(table, ["study", "profile", "gpu_name", "model"])
    median = summary[summary["statistic"] == "median"].iloc[0]
    assert median["runs"] == "1,2,3"
    assert median["gpu_uuids"] == f"{A},{B},{A}"  # run 4 failed: no value, no GPU
    # a CPU run, or a table older than the UUID column: the column is there, empty
    for rows in (table.assign(gpu_uuid=None), table.drop(columns=["gpu_uuid"])):
        summary = process_table.summarise(rows, ["study", "profile", "gpu_name", "model"])
        assert (summary["gpu_uuids"] == "").all()


def _hfta(mode: str, b: int, run: int, gpu: str, throughput: float) -> dict[str, Any]:
    return {"study": "hfta", "profile": "h100", "gpu_name": "H100", "gpu_uuid": gpu, "workload": "resnet18",
            "batch_size": 128, "image_size": 64, "seq_len": 128, "precision": "fp16", "mode": mode,
            "step": "stock", "b": b, "run": run, "status": "ok", "metric": "throughput",
            "statistic": "value", "value": throughput, "unit": "samples/s"}  # fmt: skip


def test_a_speedup_names_the_runs_and_gpus_of_both_its_sides() -> None:
    rows = [_hfta("hfta", 8, 1, A, 120_000.0), _hfta("hfta", 8, 2, A, 121_000.0)]
    rows += [_hfta("serial", 1, 1, A, 10_000.0), _hfta("serial", 1, 2, B, 11_000.0)]
    serial = speedups(pd.DataFrame(rows))
    row = serial[(serial["baseline"] == "serial") & (serial["statistic"] == "max")].iloc[0]
    assert (row["runs"], row["gpu_uuids"]) == ("1,2", f"{A},{A}")
    assert (row["baseline_runs"], row["baseline_gpu_uuids"]) == ("1,2", f"{A},{B}")


def _run(root: Path, table: pd.DataFrame) -> Path:
    (root / "tables").mkdir(parents=True)
    table.to_csv(root / "tables" / "inference_deit.csv", index=False)
    return root


def test_compare_keeps_each_sides_gpus_and_counts_rows_from_different_gpus(tmp_path: Path) -> None:
    a = _run(tmp_path / "a" / "h100", pd.DataFrame([_latency("deit-b", r, A, 3.0 + r / 10) for r in (1, 2)]))
    b_rows = [_latency("deit-b", 1, A, 3.1), _latency("deit-b", 2, B, 3.2)]
    b_rows += [_latency("deit-t", r, A, 2.0) for r in (1, 2)]
    b = _run(tmp_path / "b" / "h100", pd.DataFrame(b_rows))
    # deit-t is only in B, and A's table predates the UUID column: unknown, never an error
    a_old = _run(
        tmp_path / "old" / "h100", pd.read_csv(a / "tables" / "inference_deit.csv").drop(columns="gpu_uuid")
    )

    table = match.compare(load_run(a), load_run(b))
    row = table[table["metric"] == "latency"].iloc[0]
    assert (row["gpu_uuids_a"], row["gpu_uuids_b"]) == (A, f"{A};{B}")
    assert render.gpu_line(table) == (
        "GPUs: A's rows on GPU-aaaaaaaa, B's on GPU-aaaaaaaa, GPU-bbbbbbbb; 1 of 1 rows compare processes on "
        "different GPUs (gpu_uuids_a, gpu_uuids_b in compare.csv)."
    )
    assert "GPUs: A's rows on" in render.markdown(table, pd.DataFrame(columns=["field"]), "a", "b")

    old = match.compare(load_run(a_old), load_run(b))
    row = old[old["metric"] == "latency"].iloc[0]
    assert (row["gpu_uuids_a"], row["gpu_uuids_b"]) == ("", f"{A};{B}")
    assert row["grade"] != "not comparable"  # the missing column does not split the point
    assert render.gpu_line(old).startswith("GPUs: A's rows on not recorded, ")
