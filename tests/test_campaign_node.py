"""A node job: every device of the node measured at once, one process each, started through a barrier,
and the node's record; here on the cpu profile's stand-ins, the code path a GPU node runs."""

from __future__ import annotations

import json
from pathlib import Path

from gpurepro.campaign import layout, tables

from .conftest import run_gpurepro

# Short telemetry windows, as the pipeline tests use: a run takes seconds, most of it the imports.
FAST = (
    "--profile cpu --warmup 1 --idle-seconds 0.2 --energy-window-s 0.2 --cooldown-max-wait-s 0 --rate-hz 50"
)


def test_stand_ins_are_measured_at_once_and_read_as_gpus_of_the_node(tmp_path: Path) -> None:
    attempt = layout.attempt_dir(tmp_path / "raw", "node1", 1)
    result = run_gpurepro(
        "campaign", "node", "64", "5", "--stand-ins", "2", "--out-dir", str(attempt),
        "--log-dir", str(tmp_path / "logs"), "--sgemm-args", FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads((attempt / "node.json").read_text())
    assert record["status"] == "measured", record["reason"]
    (run,) = record["runs"]
    # both processes left the barrier together: well under a second apart, against a run of seconds
    assert set(run["start_times"]) == {"0", "1"} and 0 <= run["start_skew_s"] < 1.0
    assert [gpu["index"] for gpu in record["gpus"]] == [0, 1]
    assert all(gpu["start_time"] == run["start_times"][str(gpu["index"])] for gpu in record["gpus"])
    reps = layout.read_campaign(tmp_path / "raw")
    assert len(reps) == 10 and sorted(reps["gpu_uuid"].unique()) == [
        f"cpu-{record['hostname']}-0", f"cpu-{record['hostname']}-1"
    ]  # fmt: skip
    # each stand-in is a GPU of its own (its file names it), though both measured the CPU
    gpus = tables.per_gpu(reps)
    assert gpus["gpu"].tolist() == ["0", "1"] and (gpus["reps"] == 5).all()
    assert {path.name for path in attempt.glob("*.csv")} >= {"torch_gpu0_run1.csv", "torch_gpu1_run1.csv"}


def test_a_gpu_that_is_not_there_fails_the_node_with_its_reason(tmp_path: Path) -> None:
    attempt = layout.attempt_dir(tmp_path / "raw", "node1", 1)
    result = run_gpurepro(
        "campaign", "node", "64", "5", "--gpus", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "--out-dir",
        str(attempt), "--log-dir", str(tmp_path / "logs"),
    )  # fmt: skip
    # the job ends well, so the campaign goes on; its record says why the node was not measured
    assert result.returncode == 0, result.stderr
    record = json.loads((attempt / "node.json").read_text())
    assert record["status"] == "failed"
    assert "NVML" in record["reason"] or "is not on this node" in record["reason"], record["reason"]
    assert layout.planned_attempt(tmp_path / "raw", "node1") == 2
    assert not list(attempt.glob("*.csv"))
