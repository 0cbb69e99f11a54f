"""The reference runs shipped in reference-runs/ and the README's first screen: an archive verifies and
unpacks, two of them (the same plan on one host, one GPU and then four) compare as two runs as `gpurepro
compare` and `snakemake compare` take them, and the README stays a first screen whose setup commands are
the ones CI runs."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pandas as pd

from .conftest import ROOT, run_gpurepro, run_snakemake

ARCHIVE = ROOT / "reference-runs" / "h200-quick-2026-11-28.tar.gz"
ONE_GPU = ROOT / "reference-runs" / "h200x4-pair-one-quick-2026-11-28.tar.gz"
PLACED = ROOT / "reference-runs" / "h200x4-pair-placed-quick-2026-11-28.tar.gz"


def test_the_reference_run_unpacks_with_its_verdict_on_an_h200(tmp_path: Path) -> None:
    with tarfile.open(ARCHIVE) as packed:
        packed.extractall(tmp_path, filter="data")
    (unpacked,) = [p.parent for p in tmp_path.rglob("verdict.csv")]
    verdict = pd.read_csv(unpacked / "verdict.csv")
    assert len(verdict) == 45 and {"NVIDIA H200"} <= set(
        verdict["measured_on"].dropna().str.split(" \\(").str[0]
    )


def test_two_reference_runs_compare_point_by_point_as_two_runs(tmp_path: Path) -> None:
    """The quick plan twice on one four-GPU host (reference-runs/README.md): all on GPU 0, then placed by
    claim group. Compared, their points match; most values differ, as two runs' do (an archive set beside
    itself reads every value equal); the setting that differs is named, and DeiT-B's processes ran on GPU
    0 in one run and on two other cards in the other."""
    out = tmp_path / "out"
    result = run_gpurepro("compare", str(ONE_GPU), str(PLACED), "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    rows = pd.read_csv(out / "compare.csv")
    said = re.search(r"(\d+) same within noise", result.stdout + result.stderr)
    assert said and int(said[1]) == (rows["grade"] == "same within noise").sum() > 0, result.stdout
    assert len(rows) > 300 and (rows["a_value"] != rows["b_value"]).mean() > 0.5
    deit = rows[(rows["model"] == "deit-b") & (rows["mode"] == "eager") & (rows["metric"] == "latency")]
    assert len(deit) == 1 and deit["processes_a"].iloc[0] == deit["processes_b"].iloc[0] == 3
    one, placed = deit["gpu_uuids_a"].iloc[0].split(";"), deit["gpu_uuids_b"].iloc[0].split(";")
    assert len(one) == 1 and len(placed) == 2 and one[0] not in placed
    assert '| config placement | "one_gpu" | "claim_groups" |' in (out / "compare.md").read_text()


def test_the_placed_run_pools_a_points_processes_across_cards_and_names_them(tmp_path: Path) -> None:
    """The four-GPU placed run: the DeiT group ran on GPU 1 in rounds 1-2 and GPU 3 in round 3
    (placement.json), and each DeiT-B point is one row over its three processes naming both cards."""
    with tarfile.open(PLACED) as packed:
        packed.extractall(tmp_path, filter="data")
    (device,) = [p.parent for p in tmp_path.rglob("placement.json")]
    rounds = json.loads((device / "placement.json").read_text())["groups"]["deit/batch=1/precision=fp16"]
    assert rounds == {"1": 1, "2": 1, "3": 3}
    table = pd.read_csv(device / "tables" / "inference_deit_processes.csv", dtype={"device": str})
    eager = table[(table["model"] == "deit-b") & (table["mode"] == "eager") & (table["metric"] == "latency")]
    counted = eager[(eager["per_process"] == "median") & (eager["statistic"] == "processes")]
    assert len(counted) == 1 and counted["value"].iloc[0] == 3 and counted["device"].iloc[0] == "1,3"
    uuids = counted["gpu_uuids"].iloc[0].split(",")
    assert len(uuids) == 3 and uuids[0] == uuids[1] != uuids[2]
    verdict = pd.read_csv(device / "verdict.csv")
    assert verdict["sides"].fillna("").str.contains("claim groups placed over GPUs 0, 1, 2, 3").any()


def test_snakemake_compare_takes_the_reference_archive(workflow_copy: Path) -> None:
    (workflow_copy / "reference-runs").mkdir()
    for path in ARCHIVE.parent.glob(f"{ARCHIVE.name}*"):
        (workflow_copy / "reference-runs" / path.name).write_bytes(path.read_bytes())
    planned = run_snakemake(
        "compare",
        "-n",
        "--cores",
        "1",
        "--config",
        f"compare_with=reference-runs/{ARCHIVE.name}",
        cwd=workflow_copy,
    )
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "rule compare:" in planned.stdout + planned.stderr


def test_the_readme_is_a_first_screen_whose_setup_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    setup = "python3 -m venv .venv && . .venv/bin/activate && pip install -c constraints.txt -e ."
    assert setup in readme and "pip install -c constraints.txt -e '.[test]' && python -m pytest" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m venv .venv" in ci and "pip install -q -c constraints.txt -e '.[test]'" in ci
    pinned = dict(
        line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line
    )
    assert {"torch", "snakemake", "pandas", "transformers", "timm"} <= set(pinned)
    for page in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / page).is_file(), page
