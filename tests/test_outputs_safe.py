"""Every output is written one way: no command lands on a raw file, derived files are replaced atomically
(a failed step leaves the last good one), and a damaged raw file is named with what is wrong and how to
go on, by the table step and, before any job, by the run itself."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from gpurepro import results
from gpurepro.errors import RawFileError, ResultExistsError
from gpurepro.runplan import damaged

from .conftest import ROOT, run_gpurepro, run_snakemake
from .test_raw_immutable import fast_sgemm

REFERENCE_RUN = ROOT / "reference-runs" / "h200-quick-2026-11-28.tar.gz"


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped quick run's SGEMM raw files (real measurements with their sidecars), unpacked."""
    folder = tmp_path_factory.mktemp("run")
    with tarfile.open(REFERENCE_RUN) as tar:
        members = [
            m for m in tar.getmembers() if "/sgemm/raw/" in m.name or m.name.endswith("tables/sgemm.csv")
        ]
        tar.extractall(folder, members=members, filter="data")
    return folder / "h200"


def _raw(run: Path, name: str, into: Path) -> Path:
    """A copy of one raw file with its sidecar, write-protected as the workflow leaves them."""
    into.mkdir(parents=True, exist_ok=True)
    for source in (run / "sgemm" / "raw" / name, results.sidecar_path(run / "sgemm" / "raw" / name)):
        shutil.copy(source, into / source.name)
        (into / source.name).chmod(0o444)
    return into / name


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_aggregate_refuses_to_write_its_table_over_another_raw_file(measured: Path, tmp_path: Path) -> None:
    raw = tmp_path / "sgemm" / "raw"
    source = _raw(measured, "cublas_n8192.csv", raw)
    target = _raw(measured, "tiled_n25536.csv", raw)
    before = _digest(target)
    done = run_gpurepro("aggregate", "sgemm", str(source), "--out", str(target))
    assert done.returncode != 0
    assert f"--out {target}: that is a raw measurement" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert _digest(target) == before


@pytest.mark.parametrize(
    "where",
    ["sgemm/raw/x.csv", "sgemm/raw/traces/x.csv", "sgemm/raw/x.provenance.json", "beside/raw_file.csv"],
)
def test_raw_places_are_refused_and_only_they(tmp_path: Path, where: str) -> None:
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if where.startswith("beside"):  # a file outside raw/ that has a provenance sidecar is a measurement
        results.sidecar_path(path).write_text("{}")
    with pytest.raises(ResultExistsError, match="raw files are never written over"):
        results.write_derived(path, "x")
    assert not path.exists()
    results.write_derived(tmp_path / "raw" / "results" / "cpu" / "tables" / "t.csv", "ok")  # a user's folder


def test_a_derived_file_is_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    table = tmp_path / "tables" / "sgemm.csv"
    results.write_table(pd.DataFrame({"a": [1]}), table)
    good = table.read_bytes()

    def fails(tmp: Path) -> None:
        tmp.write_text("half a tab")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        results.write_derived_with(table, fails)
    assert table.read_bytes() == good
    assert [p.name for p in table.parent.iterdir()] == ["sgemm.csv"]  # no temporary left behind
    results.write_table(pd.DataFrame({"a": [2]}), table)
    assert pd.read_csv(table)["a"].tolist() == [2]


DAMAGE = {
    "empty": (b"", "the file is empty"),
    "truncated": (b'profile,device,n\nh200,"NVIDIA H', "not a readable CSV table, truncated or damaged"),
    "columns": (b"a,b\n1,2\n", "columns ['profile'] missing"),
    "header only": (b"profile,device\n", "a header but no rows"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_the_raw_reader_names_the_file_what_is_wrong_and_the_way_on(
    measured: Path, tmp_path: Path, case: str
) -> None:
    data, problem = DAMAGE[case]
    raw = _raw(measured, "cublas_n8192.csv", tmp_path / "sgemm" / "raw")
    raw.chmod(0o644)
    raw.write_bytes(data)
    with pytest.raises(RawFileError) as caught:
        results.read_raw(raw)
    said = str(caught.value)
    assert said.startswith(f"{raw}: {problem}")
    assert f"{results.sidecar_path(raw)} records how it was measured" in said
    assert f"snakemake --forcerun {raw}" in said


def test_aggregate_of_a_damaged_raw_file_says_so_and_keeps_the_last_table(
    measured: Path, tmp_path: Path
) -> None:
    raw = _raw(measured, "cublas_n8192.csv", tmp_path / "sgemm" / "raw")
    table = tmp_path / "tables" / "sgemm.csv"
    assert run_gpurepro("aggregate", "sgemm", str(raw), "--out", str(table)).returncode == 0
    good = _digest(table)
    raw.chmod(0o644)
    raw.write_bytes(DAMAGE["truncated"][0])
    done = run_gpurepro("aggregate", "sgemm", str(raw), "--out", str(table))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{raw}: not a readable CSV table" in done.stderr
    assert _digest(table) == good


def test_a_damaged_sidecar_is_named(measured: Path, tmp_path: Path) -> None:
    raw = _raw(measured, "cublas_n8192.csv", tmp_path / "sgemm" / "raw")
    sidecar = results.sidecar_path(raw)
    sidecar.chmod(0o644)
    sidecar.write_text('{"gpus": [')
    with pytest.raises(RawFileError, match=f"{sidecar}: not readable JSON"):
        results.read_sidecar(raw)
    assert damaged.problems([raw, sidecar]) == [f"{sidecar}: not readable JSON ({_json_error(sidecar)})"]


def _json_error(path: Path) -> str:
    try:
        json.loads(path.read_text())
    except json.JSONDecodeError as err:
        return str(err)
    raise AssertionError("valid JSON")


@pytest.mark.pipeline
def test_a_run_that_would_read_a_damaged_raw_file_stops_before_any_job(workflow_copy: Path) -> None:
    """Snakemake deletes a job's outputs before running it: the run must stop before the table step, so
    the last good table stays; `--forcerun` of the file measures it again and keeps the damaged one."""
    args = fast_sgemm(workflow_copy)
    first = run_snakemake(*args, cwd=workflow_copy)
    assert first.returncode == 0, first.stderr[-4000:]
    device = workflow_copy / "results" / "cpu"
    table = device / "tables" / "sgemm.csv"
    good = _digest(table)
    raw = device / "sgemm" / "raw" / "torch_n256.csv"
    raw.chmod(0o644)
    raw.write_bytes(DAMAGE["truncated"][0])  # newer than the table: Snakemake plans the table step again

    stopped = run_snakemake(*args, cwd=workflow_copy)
    said = stopped.stdout + stopped.stderr
    assert stopped.returncode != 0
    assert "results/cpu/sgemm/raw/torch_n256.csv: not a readable CSV table" in said
    assert "no job was started" in said and "Traceback" not in said
    assert _digest(table) == good

    again = run_snakemake(*args, "--forcerun", "results/cpu/sgemm/raw/torch_n256.csv", cwd=workflow_copy)
    assert again.returncode == 0, again.stderr[-4000:]
    (kept,) = (workflow_copy / "results" / "replaced" / "cpu").iterdir()
    assert (kept / "sgemm" / "raw" / "torch_n256.csv").read_bytes() == DAMAGE["truncated"][0]
    assert results.raw_problem(raw) is None


def test_a_results_dir_that_names_a_file_stops_in_one_line(workflow_copy: Path) -> None:
    done = run_snakemake("-n", "--cores", "1", "--config", "results_dir=README.md", cwd=workflow_copy)
    assert done.returncode != 0
    assert "results_dir=README.md: that is a file, not a folder" in done.stderr
    assert "Traceback" not in done.stderr and "NotADirectoryError" not in done.stderr
