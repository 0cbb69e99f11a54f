"""Every Python process a study spawns starts from a small module entry point, never from the `gpurepro`
command: the B workers of `concurrent` (and `mps`), the ranks of a data-parallel run and the noise
workload. Each study is started as the pipeline starts it, through the `gpurepro` console script (the
script multiprocessing's spawn start method re-runs in every process it starts), with a `sitecustomize`
on PYTHONPATH that makes every Python process list the modules it imported when it exits. Also: the
launcher of the B workers gives up on a worker killed from outside, or on workers that run too long,
and leaves none behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest

from gpurepro.hfta_study import launcher
from gpurepro.hfta_study.training import TrainSettings

from .conftest import cmdline_of

# The command line and its subcommands: a worker that imports them went through the `gpurepro` command.
COMMAND_LINE = ("gpurepro.cli", "gpurepro.commands")
LOG_VARIABLE = "GPUREPRO_TEST_IMPORT_LOG"
SITECUSTOMIZE = textwrap.dedent(
    f"""
    import atexit, json, os, sys

    def _record_imports():
        path = os.path.join(os.environ["{LOG_VARIABLE}"], f"{{os.getpid()}}.json")
        with open(path, "w") as file:
            json.dump({{"argv": sys.argv, "modules": sorted(sys.modules)}}, file)

    if "{LOG_VARIABLE}" in os.environ:
        atexit.register(_record_imports)
    """
)
SAMPLER = "gpurepro.telemetry.worker"
CPU = ["--profile", "cpu"]
FAST = ["--idle-seconds", "0.1", "--energy-window-s", "0.1", "--cooldown-max-wait-s", "0", "--rate-hz", "50"]


def _imports_of(*argv: str, folder: Path) -> list[dict[str, Any]]:
    """Run `gpurepro ARGV`; for every Python process it started (children, grandchildren), its argv and
    the modules it had imported by its end."""
    script = shutil.which("gpurepro", path=str(Path(sys.executable).parent)) or shutil.which("gpurepro")
    assert script, "the gpurepro console script is not installed beside this Python"
    site, log = folder / "site", folder / "imports"
    site.mkdir()
    log.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, LOG_VARIABLE: str(log)}
    command = subprocess.Popen(
        [script, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _, stderr = command.communicate(timeout=600)
    assert command.returncode == 0, stderr[-3000:]
    records = {int(p.stem): json.loads(p.read_text()) for p in log.glob("*.json")}
    assert command.pid in records and "gpurepro.cli" in records[command.pid]["modules"]  # the log works
    children = [record for pid, record in records.items() if pid != command.pid]
    # the telemetry sampler runs in its own small process beside the measured work: it must not import
    # the command line either, but it is not one of the workers the tests count
    samplers = [c for c in children if _started_from(c, SAMPLER)]
    assert not _imported(samplers, (*COMMAND_LINE, "torch"))
    return [c for c in children if c not in samplers]


def _imported(children: list[dict[str, Any]], names: tuple[str, ...]) -> list[tuple[list[str], list[str]]]:
    """(argv, modules) of each child that imported any of `names` or a module inside one."""

    def listed(module: str) -> bool:
        return any(module == name or module.startswith(f"{name}.") for name in names)

    hits = [(child["argv"], [m for m in child["modules"] if listed(m)]) for child in children]
    return [hit for hit in hits if hit[1]]


def _started_from(record: dict[str, Any], module: str) -> bool:
    """Whether the process ran `python -m module` (its sys.argv[0] is then that module's file)."""
    parts = tuple(module.split("."))
    return Path(record["argv"][0]).with_suffix("").parts[-len(parts) :] == parts


def test_concurrent_workers_import_only_the_training(tmp_path: Path) -> None:
    out = tmp_path / "concurrent.csv"
    argv = ["hfta", "--workload", "mlp", "--mode", "concurrent", "-B", "2", "--batch-size", "8"]
    argv += ["--steps", "2", "--warmup", "1", "--gpu", "cpu", *CPU, *FAST, "--out", str(out)]
    children = _imports_of(*argv, folder=tmp_path)
    assert not _imported(children, (*COMMAND_LINE, "jsonschema"))
    assert len(children) == 2, [c["argv"] for c in children]
    for worker in children:
        assert _started_from(worker, launcher.WORKER_START)
        assert "gpurepro.hfta_study.training" in worker["modules"]
    assert set(pd.read_csv(out)["status"]) == {"ok"}


def test_ddp_ranks_start_from_the_rank_module(tmp_path: Path) -> None:
    out = tmp_path / "ddp.csv"
    argv = ["train", "resnet50", "--gpus", "cpu", "--nproc", "2", *CPU, "--image-size", "32"]
    argv += ["--batch-size", "2", "--warmup", "1", "--log-interval", "1", "--iterations", "2"]
    children = _imports_of(*argv, "--out", str(out), folder=tmp_path)
    assert not _imported(children, COMMAND_LINE)  # torchrun's agent, and each rank
    ranks = [c for c in children if _started_from(c, "gpurepro.training.rank")]
    assert len(ranks) == 2 and all("gpurepro.training.loop" in r["modules"] for r in ranks)
    assert set(pd.read_csv(out)["world_size"]) == {2}


def test_the_noise_workload_starts_from_the_train_command_alone(tmp_path: Path) -> None:
    noise = "--image-size 32 --batch-size 2 --warmup 1 --log-interval 1"
    argv = ["sgemm", "64", "2", "cpu", *CPU, *FAST, "--noise-workload", "resnet50", "--noise-gpus", "cpu"]
    argv += ["--noise-args", noise, "--out", str(tmp_path / "sgemm.csv")]
    children = _imports_of(*argv, folder=tmp_path)
    assert not _imported(children, ("gpurepro.cli",))  # the train command itself it does import
    assert len(children) == 1 and _started_from(children[0], "gpurepro.commands.train")


def _tiny(steps: int) -> TrainSettings:
    return TrainSettings("mlp", 8, "fp32", steps, 1, "sgd", 0.01, 0, "cpu", threads=1)


def _workers() -> list[psutil.Process]:
    # cmdline_of: a child may be gone by the time its command line is read
    return [p for p in psutil.Process().children() if launcher.WORKER_ENTRY in cmdline_of(p)]


def test_a_worker_killed_from_outside_fails_the_point(tmp_path: Path) -> None:
    def kill_one() -> None:
        deadline = time.monotonic() + 60
        while len(_workers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        _workers()[1].kill()

    killer = threading.Thread(target=kill_one)
    killer.start()
    with pytest.raises(launcher.PointOutcome, match=r"process [01] of 2 exited with code -9 without"):
        launcher.run_processes(_tiny(10**9), 2, timeout_s=120)
    killer.join()
    assert not _workers()


def test_workers_that_run_too_long_are_given_up_on() -> None:
    start = time.monotonic()
    with pytest.raises(launcher.PointOutcome, match="processes did not finish within 1 s"):
        launcher.run_processes(_tiny(10**9), 2, timeout_s=1)
    # 10**9 steps would take days: well under the 10-minute mark is giving up, on any host
    assert time.monotonic() - start < 600 and not _workers()
