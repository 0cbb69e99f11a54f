"""The tables around the verdict: one table across devices, what each job cost (benchmark files), GPUs
told apart by UUID when every cluster job measures GPU 0, and the check that CUDA and NVML measure the
same GPU."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gpurepro import combine, runtimes
from gpurepro.errors import GpureproError
from gpurepro.measure_job import visible_device_mismatch
from gpurepro.variability.summary import gpu_labels, summarise

from .conftest import run_gpurepro

BENCHMARK = (  # Snakemake's benchmark TSV: a header and one row per job
    "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    "{s}\t0:00:0{s}\t648.4\t3554.0\t526.3\t543.3\t48.8\t0.05\t30.0\t3.3\n"
)


def write_table(results: Path, profile: str, rows: list[dict]) -> Path:
    path = results / profile / "tables" / "sgemm.csv"
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_combine_stacks_the_same_table_of_every_profile(tmp_path: Path) -> None:
    h200 = write_table(
        tmp_path, "h200", [{"profile": "h200", "metric": "rate", "value": 51.0, "unit": "TFLOP/s"}]
    )
    cpu = write_table(tmp_path, "cpu", [{"metric": "rate", "value": 0.02, "unit": "TFLOP/s"}])
    table = combine.combine([h200, cpu])
    assert list(table["profile"]) == ["cpu", "h200"] and list(table["unit"]) == ["TFLOP/s"] * 2


def test_combine_refuses_mislabelled_or_mixed_tables(tmp_path: Path) -> None:
    wrong = write_table(tmp_path, "v100", [{"profile": "h200", "metric": "rate", "value": 1.0, "unit": "x"}])
    with pytest.raises(GpureproError, match="holds rows of profile"):
        combine.combine([wrong])
    other = tmp_path / "h200" / "tables" / "variability_summary.csv"
    other.parent.mkdir(parents=True)
    other.write_text("metric,value\n")
    with pytest.raises(GpureproError, match="one table at a time"):
        combine.combine([wrong, other])


def test_runtimes_from_benchmark_folders(tmp_path: Path) -> None:
    bench = tmp_path / "results" / "h200" / "benchmarks"
    for name, seconds in [
        ("sgemm/torch_n4096", 3),
        ("sgemm/plot", 2),
        ("build_kernels", 9),
        ("report/verdict", 1),
    ]:
        path = bench / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BENCHMARK.format(s=seconds))
    table = runtimes.table([bench])
    wall = table[(table["metric"] == "wall_time") & (table["statistic"] == "value")]
    assert set(zip(wall["step"], wall["job"], wall["value"], strict=True)) == {
        ("sgemm", "torch_n4096", 3.0),
        ("sgemm", "plot", 2.0),
        ("build_kernels", "build_kernels", 9.0),
    }  # the report stage's own benchmarks are left out
    assert set(table["profile"]) == {"h200"} and set(table["unit"]) >= {"s", "MB", "%"}
    totals = table[table["statistic"] == "sum"].set_index("step")["value"]
    assert totals["sgemm"] == 5.0 and totals["build_kernels"] == 9.0
    out = tmp_path / "runtimes.csv"
    table.to_csv(out, index=False)
    plotted = run_gpurepro("plot", "runtimes", str(out), "--out", str(tmp_path / "runtimes.png"))
    assert plotted.returncode == 0, plotted.stderr
    assert (tmp_path / "runtimes.png").read_bytes()[:4] == b"\x89PNG"


def test_runtimes_without_benchmarks_says_so(tmp_path: Path) -> None:
    with pytest.raises(GpureproError, match="no benchmark files found"):
        runtimes.table([tmp_path])


def reps(devices: list[str], uuids: list[str]) -> pd.DataFrame:
    rows = []
    for device, uuid in zip(devices, uuids, strict=True):
        for rep in range(3):
            rows.append(
                {"profile": "h100", "backend": "cublas", "n": 8192, "device": device, "gpu_uuid": uuid,
                 "rep": rep, "run": 1, "ms": 10.0 + (uuid == "GPU-b"), "tflops": 100.0,
                 "power_w_median": 300.0, "sm_clock_mhz_median": 1980.0, "temperature_c_median": 50.0,
                 "energy_per_rep_j": 3.0, "throttled": False, "clock_event_names": ""}
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_gpus_are_told_apart_by_uuid_when_every_job_measures_gpu_0() -> None:
    local = reps(["0", "1"], ["GPU-a", "GPU-b"])
    assert set(gpu_labels(local)) == {"0", "1"}
    cluster = reps(["0", "0", "0"], ["GPU-a", "GPU-b", "GPU-a"])  # GPU-a measured by two jobs
    assert set(gpu_labels(cluster)) == {"0 GPU-a", "0 GPU-b"}
    summary = summarise(cluster)
    across = summary[(summary["scope"] == "across gpus") & (summary["metric"] == "gpus")]
    assert across["value"].item() == 2
    spread = summary[(summary["scope"] == "across gpus") & (summary["statistic"] == "spread_pct")]
    assert spread[spread["metric"] == "time"]["value"].item() == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("index", "visible", "count", "uuid", "ok"),
    [
        (0, None, 4, "GPU-a", True),  # locally: unset
        (1, "0,1", 2, "GPU-b", True),
        (0, "0", 1, "GPU-a", True),  # SLURM with ConstrainDevices: only the job's GPU, numbered 0
        (0, "3", 1, "GPU-a", True),  # ... or numbered as on the node: still the only GPU NVML sees
        (0, "3", 4, "GPU-a", False),  # SLURM without it: CUDA's 0 is the node's 3, NVML's 0 is not
        (0, "1", 2, "GPU-a", False),  # a local CUDA_VISIBLE_DEVICES=1 with GPU 0 asked for
        (0, "GPU-a", 4, "GPU-a1234", True),
        (0, "GPU-b", 4, "GPU-a1234", False),
        (2, "GPU-c", 4, "GPU-c99", True),  # a node job's process: host GPU 2 alone, by its UUID (CUDA's 0)
        (1, "0", 2, "GPU-b", False),  # CUDA sees one GPU: there is no GPU 1
        (0, "MIG-1234", 4, "GPU-a", True),  # nothing to compare
    ],
)
def test_cuda_and_nvml_must_measure_the_same_gpu(
    index: int, visible: str | None, count: int, uuid: str, ok: bool
) -> None:
    message = visible_device_mismatch(index, visible, count, uuid)
    assert (message is None) == ok, message
    if not ok:
        assert "CUDA_VISIBLE_DEVICES" in message
