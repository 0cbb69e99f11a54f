"""`gpurepro --help` lists the subcommands; `detect` says what it found and what auto would pick."""

from __future__ import annotations

import json

from .conftest import HAVE_GPU, run_gpurepro


def test_help_lists_subcommands() -> None:
    result = run_gpurepro("--help")
    assert result.returncode == 0
    for command in ["detect", "sgemm", "telemetry", "aggregate", "plot"]:
        assert command in result.stdout


def test_detect_reports_gpus_and_the_auto_profile() -> None:
    text = run_gpurepro("detect")
    data = json.loads(run_gpurepro("detect", "--json").stdout)
    assert text.returncode == 0 and f"device=auto picks profile: {data['profile']}" in text.stdout
    if HAVE_GPU:
        assert data["gpus"] and data["profile"] != "cpu"
        assert data["gpus"][0]["uuid"].startswith("GPU-") and "power limit (W)" in text.stdout
    else:
        assert data["profile"] == "cpu" and data["gpus"] == []
        assert "No NVIDIA GPU found" in text.stdout


def test_telemetry_command_records_a_trace(tmp_path) -> None:
    out = tmp_path / "trace.csv"
    result = run_gpurepro("telemetry", "cpu", "--seconds", "0.5", "--rate-hz", "40", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Hz achieved" in result.stderr
    assert len(out.read_text().splitlines()) > 10
