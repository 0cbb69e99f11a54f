"""A node job: every device of the node measured at once, one process each, started through a barrier,
and the node's record; here on the cpu profile's stand-ins, the code path a GPU node runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from gpurepro.campaign import layout, tables, unrecorded

from .conftest import GENEROUS_SKEW_S, cmdline_of, run_gpurepro

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
    # both processes left the barrier together: the skew is their starts' spread, held only to a
    # generous bound (GENEROUS_SKEW_S: how close they start is the host's doing, not judged here)
    assert set(run["start_times"]) == {"0", "1"}
    assert run["start_skew_s"] == max(run["start_times"].values()) - min(run["start_times"].values())
    assert 0 <= run["start_skew_s"] < GENEROUS_SKEW_S
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


def _start_node(tmp_path: Path, *more: str) -> tuple[subprocess.Popen[str], Path]:
    """A node job of two stand-ins measuring long enough to be killed mid-run, and its attempt folder."""
    attempt = layout.attempt_dir(tmp_path / "raw", "node1", 1)
    argv = [sys.executable, "-m", "gpurepro", "campaign", "node", "1024", "2000", "--stand-ins", "2",
            "--out-dir", str(attempt), "--log-dir", str(tmp_path / "logs"), "--sgemm-args", FAST,
            *more]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), attempt


def _workers(node: subprocess.Popen[str], count: int = 2) -> list[psutil.Process]:
    """The node job's per-device processes (spawned: their command line runs spawn_main), once started."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        children = psutil.Process(node.pid).children()
        # cmdline_of: a child may be gone by the time its command line is read
        found = [child for child in children if any("spawn_main" in part for part in cmdline_of(child))]
        if len(found) >= count:
            return found
        time.sleep(0.2)
    raise AssertionError("the node job started no per-device processes within 120 s")


def test_a_worker_killed_by_a_signal_fails_the_node_naming_the_signal(tmp_path: Path) -> None:
    node, attempt = _start_node(tmp_path, "--barrier-timeout-s", "5")
    first = min(_workers(node), key=lambda process: process.create_time())
    first.kill()  # as the out-of-memory killer would
    _out, err = node.communicate(timeout=300)
    assert node.returncode == 0, err  # the job ends well: the campaign goes on with the other nodes
    record = json.loads((attempt / "node.json").read_text())
    assert record["status"] == "failed"
    assert "run 1 killed by signal 9 (SIGKILL)" in record["reason"], record["reason"]


def test_a_node_job_killed_by_slurms_sigterm_records_the_signal_and_stops_its_processes(
    tmp_path: Path,
) -> None:
    node, attempt = _start_node(tmp_path)
    workers = _workers(node)
    job = json.loads((attempt / "job.json").read_text())
    assert job["pid"] == node.pid and job["slurm_job_id"] is None
    node.send_signal(signal.SIGTERM)  # SLURM's time limit, or scancel
    _out, err = node.communicate(timeout=120)
    assert node.returncode == 0, err
    record = json.loads((attempt / "node.json").read_text())
    assert record["status"] == "failed"
    assert record["reason"] == "the node job was killed by signal 15 (SIGTERM) during run 1 of 1"
    psutil.wait_procs(workers, timeout=30)
    assert not any(worker.is_running() for worker in workers)


def test_a_run_past_its_time_limit_is_stopped_and_named(tmp_path: Path) -> None:
    node, attempt = _start_node(tmp_path, "--run-timeout-s", "3")
    _out, err = node.communicate(timeout=120)
    assert node.returncode == 0, err
    reason = json.loads((attempt / "node.json").read_text())["reason"]
    assert "device 0 run 1 did not end within 3 s: stopped" in reason, reason


def test_a_node_job_killed_before_its_record_is_recorded_by_the_next_tables(tmp_path: Path) -> None:
    node, attempt = _start_node(tmp_path)
    workers = _workers(node)
    node.kill()  # SIGKILL: nothing in the job can record it
    node.wait(timeout=60)
    for worker in workers:
        worker.kill()
    assert not (attempt / "node.json").exists() and (attempt / "job.json").is_file()
    result = run_gpurepro(
        "campaign", "tables", str(tmp_path / "raw"), "--campaign", "c", "--out-dir", str(tmp_path / "t")
    )
    assert result.returncode == 0, result.stderr
    record = json.loads((attempt / "node.json").read_text())
    assert record["status"] == "failed" and "its process is gone" in record["reason"], record["reason"]
    assert f"(pid {node.pid} on " in record["reason"]
    nodes = pd.read_csv(tmp_path / "t" / "campaign_nodes.csv")
    assert nodes["status"].tolist() == ["failed"] and "ended before recording" in nodes["reason"].iloc[0]
    assert layout.planned_attempt(tmp_path / "raw", "node1") == 2


def test_a_slurm_job_that_ended_unrecorded_is_recorded_with_sacct_s_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = tmp_path / "raw"
    for node, job_id in (("n1", "4242"), ("n2", "4243")):
        layout.write_job(layout.attempt_dir(raw, node, 1), {
            "hostname": node, "pid": 1234, "started": time.time() - 1000, "slurm_job_id": job_id,
        })  # fmt: skip
    bin_dir = tmp_path / "bin"  # a stand-in sacct: 4242 ran out of time, 4243 still runs
    bin_dir.mkdir()
    (bin_dir / "sacct").write_text(
        '#!/bin/sh\ncase "$*" in\n'
        "  *4242*) echo '4242|TIMEOUT|0:15|00:16:02|00:16:00' ;;\n"
        "  *4243*) echo '4243|RUNNING|0:0|00:03:00|00:16:00' ;;\nesac\n"
    )
    (bin_dir / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    recorded = unrecorded.record(raw)
    assert [attempt.node for attempt in recorded] == ["n1"]
    reason = layout.read_record(layout.attempt_dir(raw, "n1", 1))["reason"]  # type: ignore[index]
    assert reason.endswith(
        "ended before recording: SLURM job 4242 TIMEOUT (exit code 0:15) after 00:16:02 of 00:16:00"
    )
    assert layout.read_record(layout.attempt_dir(raw, "n2", 1)) is None  # still running: left alone
