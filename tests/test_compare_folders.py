"""`gpurepro compare A B` on the folders a reviewer has after two runs (`results` and a copy of another
run's): a folder holding one device's results stands for that device; one holding several names the
device folders to choose from (issue 42)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gpurepro.cli import main
from gpurepro.compare.folders import baseline_files, device_folder
from gpurepro.compare.runs import load_run
from gpurepro.errors import GpureproError

from .test_compare import make_run


def test_a_results_folder_of_one_device_is_that_device(tmp_path: Path) -> None:
    h100 = make_run(tmp_path / "results")
    (tmp_path / "results" / "compare" / "old_vs_h100").mkdir(parents=True)  # not a device: skipped
    (tmp_path / "results" / "logs").mkdir()  # no tables: not a device
    assert device_folder(tmp_path / "results") == h100
    assert device_folder(h100) == h100  # a device folder itself, as before
    assert load_run(tmp_path / "results").name == "h100"


def test_a_results_folder_of_several_devices_names_them(tmp_path: Path) -> None:
    make_run(tmp_path / "results")
    make_run(tmp_path / "results", "h200")
    combined = tmp_path / "results" / "combined" / "tables"  # tables across devices, never a device
    combined.mkdir(parents=True)
    pd.DataFrame({"x": [1]}).to_csv(combined / "sgemm.csv", index=False)
    results = tmp_path / "results"
    with pytest.raises(GpureproError) as err:
        device_folder(results)
    assert str(err.value) == (
        f"{results}: holds the results of 2 devices; name one of them: {results / 'h100'}, {results / 'h200'}"
    )


def test_a_folder_without_any_device_says_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(GpureproError, match="not a results folder of one device .* nor a results folder"):
        device_folder(tmp_path)
    with pytest.raises(GpureproError, match="not a results folder"):
        device_folder(tmp_path / "absent")


def test_compare_results_r2_takes_each_folders_one_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reviewer's command, `gpurepro compare results r2`, on two single-device results folders."""
    make_run(tmp_path / "results")
    make_run(tmp_path / "r2", sgemm_ms=22.0, seed=5)
    out = tmp_path / "out"
    assert main(["compare", str(tmp_path / "results"), str(tmp_path / "r2"), "--out", str(out)]) == 0
    assert "slower by" in (out / "compare.md").read_text()
    assert f"compare {tmp_path / 'results'} -> {tmp_path / 'r2'}:" in capsys.readouterr().err

    make_run(tmp_path / "r2", "h200")
    assert main(["compare", str(tmp_path / "results"), str(tmp_path / "r2"), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "holds the results of 2 devices; name one of them:" in error
    assert str(tmp_path / "r2" / "h100") in error and str(tmp_path / "r2" / "h200") in error


def test_the_workflow_baseline_follows_the_same_rule(tmp_path: Path) -> None:
    h100 = make_run(tmp_path / "lastmonth")
    assert baseline_files(str(tmp_path / "lastmonth")) == [
        str(path) for path in sorted((h100 / "tables").glob("*.csv"))
    ]
    archive = tmp_path / "lastmonth.tar.gz"
    assert main(["pack", str(h100), "--out", str(archive)]) == 0
    assert baseline_files(str(archive)) == [str(archive), f"{archive}.sha256"]  # as gpurepro compare takes it
    make_run(tmp_path / "lastmonth", "h200")
    with pytest.raises(GpureproError, match=f"{tmp_path / 'lastmonth'}: holds the results of 2"):
        baseline_files(str(tmp_path / "lastmonth"))
