"""Raw measurements are never replaced silently: a run whose settings changed since points were measured
stops before any job, naming the points and the settings; a forced rerun moves the old files aside.
The planning policy (gpurepro/runplan/replacements.py) is checked on its own, and the whole of it through
Snakemake on the cpu profile with checksums."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from gpurepro import provenance
from gpurepro.runplan import replacements
from gpurepro.runplan.replacements import Replacement

from .conftest import run_snakemake

PARAMS = "params have changed since last execution"


def _checksums(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _measured(tmp_path: Path, quick: bool) -> tuple[Path, list[str]]:
    """A device folder with one raw point whose sidecar names a kept config of `quick`."""
    device = tmp_path / "results" / "cpu"
    config = {"device": "cpu", "quick": quick, "telemetry": {"rate_hz": 50}}
    digest = provenance.config_hash(config)
    provenance.record_config(config, device, digest)
    raw = device / "sgemm" / "raw"
    raw.mkdir(parents=True)
    (raw / "torch_n256.csv").write_text("rep,time_s\n0,1.0\n")
    (raw / "torch_n256.provenance.json").write_text(json.dumps({"config_hash": digest}))
    return device, [str(raw / "torch_n256.csv"), str(raw / "torch_n256.provenance.json")]


def test_a_changed_setting_is_refused_with_the_keys_that_changed(tmp_path: Path) -> None:
    device, files = _measured(tmp_path, quick=False)
    found = [Replacement("sgemm_run", tuple(files), (PARAMS,), params_before=("20",), params_now=("10",))]
    message = replacements.refusal(
        found, device, {"device": "cpu", "quick": True, "telemetry": {"rate_hz": 50}}
    )
    assert message is not None
    assert "would replace 2 raw files of 1 points" in message
    assert f"{files[0]} (rule sgemm_run): {PARAMS}" in message
    assert "  quick: false -> true" in message and "rate_hz" not in message  # only what changed
    assert "--config results_dir=<new folder>" in message and "--forcerun <rule>" in message
    assert "as it was measured, run with its settings: --config quick=false\n" in message
    # where the sidecars name no kept config, the jobs' own settings before and now are said instead
    message = replacements.refusal(found, tmp_path / "elsewhere", {"quick": True})
    assert message is not None and "before: 20" in message and "and now: 10" in message
    assert "as it was measured" not in message


@pytest.mark.parametrize(
    ("key", "value", "argument"),
    [
        ("quick", "false", "quick=false"),
        ("placement", '"one_gpu"', "placement=one_gpu"),
        ("gpus", "[0, 1]", "'gpus=[0, 1]'"),
        ("telemetry.rate_hz", "50", "'telemetry={rate_hz: 50}'"),
        ("data.imagenet.full", "true", "'data={imagenet: {full: true}}'"),
        ("compare_with", '"a run; rm x"', "'compare_with=\"a run; rm x\"'"),
    ],
)
def test_the_settings_measured_with_are_said_as_config_arguments(key: str, value: str, argument: str) -> None:
    assert replacements.config_argument(key, value) == argument


def test_no_way_back_is_offered_where_a_key_had_several_values_or_none() -> None:
    assert replacements.settings_measured_with([("quick", {"false"}, "true")]) == ["quick=false"]
    assert replacements.settings_measured_with([("quick", {"false", "true"}, "true")]) is None
    assert replacements.settings_measured_with([("placement", {replacements.NOT_SET}, '"one_gpu"')]) is None
    assert replacements.settings_measured_with([]) is None


@pytest.mark.parametrize(
    ("item", "requested"),
    [
        (Replacement("r", ("x.csv",), ("forced",), forced=True), True),
        (Replacement("r", ("x.csv",), ("incomplete output files",), incomplete=True), True),
        # incomplete, but its settings changed too: the run must not measure it with other settings
        (Replacement("r", ("x.csv",), ("incomplete output files", PARAMS), incomplete=True), False),
        (Replacement("r", ("x.csv",), ("code has changed since last execution",)), False),
        (Replacement("r", ("x.csv",), ("updated input files",)), False),
        (Replacement("r", ("x.csv",), ("output files have to be generated",)), False),
    ],
)
def test_only_forced_or_unfinished_points_may_be_replaced(item: Replacement, requested: bool) -> None:
    assert item.requested is requested
    assert (replacements.refusal([item], Path("results/cpu"), {}) is None) is requested


def test_set_aside_moves_requested_files_out_of_the_device_folder(tmp_path: Path) -> None:
    device, files = _measured(tmp_path, quick=False)
    before = _checksums(device / "sgemm")
    kept = replacements.set_aside(
        [Replacement("sgemm_run", tuple(files), ("forced",), forced=True)],
        device,
        now=datetime(2026, 11, 28, 3, 0, tzinfo=timezone.utc),
    )
    assert kept == tmp_path / "results" / "replaced" / "cpu" / "20261128T030000.000000Z"
    assert _checksums(kept / "sgemm") == before and not any((device / "sgemm" / "raw").iterdir())
    refused = [Replacement("sgemm_run", ("elsewhere.csv",), (PARAMS,))]
    assert replacements.set_aside(refused, device) is None


def fast_sgemm(workflow_copy: Path) -> list[str]:
    """Snakemake's arguments for the SGEMM study on the cpu profile with the waits cut short (a config
    file in the copy): the pipeline tests' smallest real run."""
    fast = workflow_copy / "fast.yaml"
    fast.write_text(
        yaml.safe_dump(
            {"telemetry": {"idle_seconds": 0.5, "min_energy_window_s": 0.5, "cooldown_max_wait_s": 0}}
        )
    )
    return ["sgemm", "--cores", "2", "--configfile", str(fast)]


@pytest.mark.pipeline
def test_a_quick_run_after_a_full_one_keeps_every_raw_file(workflow_copy: Path) -> None:
    """The issue's case: `snakemake sgemm`, then `snakemake sgemm --config quick=true`."""
    args = fast_sgemm(workflow_copy)
    first = run_snakemake(*args, cwd=workflow_copy)
    assert first.returncode == 0, first.stderr[-4000:]
    raw = workflow_copy / "results" / "cpu" / "sgemm" / "raw"
    measured = _checksums(raw)
    assert "torch_n256.csv" in measured and "torch_n1024.csv" in measured

    planned = run_snakemake(*args, "-n", "--config", "quick=true", cwd=workflow_copy)
    said = planned.stdout + planned.stderr
    assert planned.returncode == 0 and "gpurepro: a run would stop" in said and "quick: false -> true" in said

    quick = run_snakemake(*args, "--config", "quick=true", cwd=workflow_copy)
    said = quick.stdout + quick.stderr
    assert quick.returncode != 0
    assert "stopped before any job: this run would replace 8 raw files of 2 points" in said
    assert "results/cpu/sgemm/raw/torch_n256.csv (rule sgemm_run)" in said and "quick: false -> true" in said
    assert _checksums(raw) == measured  # byte-identical, none missing
    # the way back it offers plans none of them again
    assert "run with its settings: --config quick=false\n" in said
    back = run_snakemake(*args, "-n", "--config", "quick=false", cwd=workflow_copy)
    assert back.returncode == 0 and "sgemm_run" not in back.stdout and "would stop" not in back.stderr

    # asked for: the points run again, and what they replace is kept, byte-identical, outside the run
    forced = run_snakemake(*args, "--forcerun", "sgemm_run", "--config", "quick=true", cwd=workflow_copy)
    assert forced.returncode == 0, forced.stderr[-4000:]
    (kept,) = (workflow_copy / "results" / "replaced" / "cpu").iterdir()
    assert _checksums(kept / "sgemm" / "raw") == {
        name: digest for name, digest in measured.items() if name.startswith(("torch_n256.", "torch_n512."))
    }
    assert _checksums(raw)["torch_n256.csv"] != measured["torch_n256.csv"]  # measured again, quick
    assert _checksums(raw)["torch_n1024.csv"] == measured["torch_n1024.csv"]

    # --touch marks the full run's points up to date for quick=false again: it replaces no file, so it
    # runs, and what is measured stays as it is
    before_touch = _checksums(raw)
    touched = run_snakemake(*args, "--touch", "--forceall", cwd=workflow_copy)
    said = touched.stdout + touched.stderr
    assert touched.returncode == 0, said[-4000:]
    assert "would replace" not in said and "moved to" not in said
    assert _checksums(raw) == before_touch
