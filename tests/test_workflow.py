"""The Snakemake workflow: every profile plans (dry-run) anywhere; bad config fails before any job with the
key and what is allowed; lint has nothing but the pending container lint; and the cpu pipeline runs end to
end, writes protected raw data, and reruns one target alone."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from .conftest import ROOT, run_snakemake

DEVICES = ["cpu", "v100", "a100", "h100", "h200", "rtx6000", "t4"]


@pytest.mark.parametrize("device", DEVICES)
def test_dry_run_for_every_profile(device: str) -> None:
    result = run_snakemake("-n", "--cores", "4", "--config", f"device={device}", cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    planned = result.stdout + result.stderr
    assert f"results/{device}/plots/sgemm.png" in planned
    assert f"results/{device}/plots/variability.png" in planned
    if device != "cpu" and shutil.which("nvcc"):
        assert "rule build_kernels:" in planned and f"results/{device}/sgemm/raw/tiled_n" in planned


def test_kernels_are_skipped_plainly_without_nvcc() -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # nvcc lives elsewhere (/usr/local/bin, /usr/local/cuda)
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", "device=h100"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "nvcc not found: the cublas and tiled SGEMM kernels are skipped" in result.stderr
    assert "rule build_kernels:" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "devcie=v100",
            "Additional properties are not allowed ('devcie' was unexpected); allowed keys: ",
        ),
        ("device=v10", "key device: 'v10' is not one of ['auto', 'cpu'"),
        ("quick=maybe", "key quick: 'maybe' is not of type 'boolean'"),
        ("gpus=[-1]", "key gpus.0: -1 is less than the minimum of 0"),
        ("device_check=ignore", "key device_check: 'ignore' is not one of ['error', 'warn']"),
    ],
)
def test_bad_config_fails_before_any_job(override: str, message: str) -> None:
    result = run_snakemake("-n", "--cores", "1", "--config", override, cwd=ROOT)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr


def test_gpus_list_from_the_command_line_is_accepted() -> None:
    result = run_snakemake("-n", "--cores", "1", "--config", "device=h100", "gpus=[0]", cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]


def test_negative_size_in_a_profile_names_the_key(workflow_copy: Path) -> None:
    profile_file = workflow_copy / "config/devices/v100.yaml"
    profile = yaml.safe_load(profile_file.read_text())
    profile["sgemm"]["sizes"] = [-4096]
    profile_file.write_text(yaml.safe_dump(profile))
    result = run_snakemake("-n", "--cores", "1", "--config", "device=v100", cwd=workflow_copy)
    assert result.returncode != 0
    assert "config/devices/v100.yaml: key sgemm.sizes.0: -4096 is less than the minimum of 1" in (
        result.stdout + result.stderr
    )


def test_lint_finds_nothing_but_the_missing_container() -> None:
    result = run_snakemake("--lint", cwd=ROOT)
    output = result.stdout + result.stderr
    titles = {line.strip()[2:] for line in output.splitlines() if line.strip().startswith("* ")}
    # Rules get their software from the project's container image once it is built by the workflow;
    # until then this is the one lint allowed.
    assert titles <= {"Specify a conda environment or container for each rule.:"}, output


@pytest.mark.pipeline
def test_cpu_pipeline_end_to_end(workflow_copy: Path) -> None:
    test_config = workflow_copy / "test-config.yaml"
    test_config.write_text(
        yaml.safe_dump(
            {
                "telemetry": {
                    "rate_hz": 50,
                    "idle_seconds": 0.5,
                    "min_energy_window_s": 0.5,
                    "cooldown_max_wait_s": 0,
                }
            }
        )
    )
    args = ["--cores", "2", "--configfile", str(test_config), "--config", "device=auto", "quick=true"]
    result = run_snakemake(*args, cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-4000:]

    results = workflow_copy / "results" / "cpu"
    table = pd.read_csv(results / "tables" / "sgemm.csv")
    assert sorted(table["n"].unique()) == [256, 512]  # the cpu profile's quick sizes
    rate = table[(table["metric"] == "rate") & (table["statistic"] == "median")]
    assert (rate["value"] > 0).all() and (rate["unit"] == "TFLOP/s").all()
    assert (results / "plots" / "sgemm.png").read_bytes()[:4] == b"\x89PNG"
    for raw in (results / "sgemm" / "raw").iterdir():
        assert not os.stat(raw).st_mode & stat.S_IWUSR, f"{raw} is not write-protected"
    assert sorted(p.name for p in (results / "logs" / "sgemm").iterdir()) == [
        "aggregate.log",
        "plot.log",
        "torch_n256.log",
        "torch_n512.log",
    ]
    assert len(list((results / "benchmarks" / "sgemm").iterdir())) == 2

    reps = pd.read_csv(results / "tables" / "variability_reps.csv")
    assert sorted(reps["run"].unique()) == [1, 2] and set(reps["device"]) == {"cpu"}
    summary = pd.read_csv(results / "tables" / "variability_summary.csv")
    assert {"time", "rate", "rate_vs_median_gpu", "throttled_reps"} <= set(summary["metric"])
    assert (results / "plots" / "variability.png").read_bytes()[:4] == b"\x89PNG"

    # a changed device check (or any key the measurements do not depend on) reruns nothing
    nothing = run_snakemake("-n", *args, "device_check=warn", cwd=workflow_copy)
    assert "Nothing to be done" in nothing.stdout + nothing.stderr

    replot = run_snakemake("plot_sgemm", "--forcerun", "plot_sgemm", *args, cwd=workflow_copy)
    assert replot.returncode == 0, replot.stderr[-4000:]
    log = replot.stdout + replot.stderr
    assert "rule plot_sgemm:" in log and "rule sgemm_torch:" not in log
