"""The fork server: a job forked from it runs as a job started on its own would (its descriptors, working
folder, environment, exit code, provenance), signals and a vanished client end the job, a server that
cannot be reached leaves the job to run in its own interpreter, and the server leaves with its parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import psutil
import pytest

from gpurepro.forkserver import lifecycle, protocol

from .conftest import gone_within

FAST = ["--profile", "cpu", "--idle-seconds", "0.1", "--energy-window-s", "0.1", "--cooldown-max-wait-s", "0"]
# A job that says it started, then sleeps: for the signal tests (the server imports it from PYTHONPATH).
SLEEPER = textwrap.dedent(
    """
    import os, sys, time

    def main(argv):
        with open(argv[0], "w") as file:
            file.write(str(os.getpid()))
        time.sleep(120)
        return 0
    """
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lifecycle.ForkServer]:
    modules = tmp_path_factory.mktemp("modules")
    (modules / "forkserver_sleeper.py").write_text(SLEEPER)
    saved = dict(os.environ)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(modules), saved.get("PYTHONPATH")]))
    started = lifecycle.start(tmp_path_factory.mktemp("log") / "forkserver.log")
    try:
        yield started
    finally:
        started.stop()
        os.environ.clear()
        os.environ.update(saved)


def gpurepro(
    *argv: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpurepro", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_a_forked_job_writes_to_its_own_output_and_returns_its_exit_code(
    server: lifecycle.ForkServer,
) -> None:
    assert os.environ[protocol.ENV_VAR] == str(server.socket)
    ok = gpurepro("--version")
    assert ok.returncode == 0 and ok.stdout.strip().startswith("gpurepro ")
    bad = gpurepro("no-such-command")
    assert bad.returncode == 2 and "invalid choice: 'no-such-command'" in bad.stderr


def test_a_forked_job_runs_in_the_clients_folder_with_its_environment(
    server: lifecycle.ForkServer, tmp_path: Path
) -> None:
    env = {**os.environ, "GPUREPRO_CONFIG_HASH": "made-for-this-test"}
    result = gpurepro("sgemm", "64", "2", "cpu", *FAST, "--out", "sgemm.csv", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert pd.read_csv(tmp_path / "sgemm.csv")["n"].eq(64).all()  # relative to the client's folder
    record = json.loads((tmp_path / "sgemm.provenance.json").read_text())
    assert record["config_hash"] == "made-for-this-test"
    assert record["launch"] == f"forked from fork server {server.process.pid}"
    assert record["command"][1:] == ["sgemm", "64", "2", "cpu", *FAST, "--out", "sgemm.csv"]


def test_a_job_on_its_own_says_so_in_its_provenance(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != protocol.ENV_VAR}
    result = gpurepro("sgemm", "64", "2", "cpu", *FAST, "--out", "sgemm.csv", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "sgemm.provenance.json").read_text())["launch"] == "own interpreter"


def test_the_b_processes_of_a_concurrent_point_are_forked_with_their_pipes(
    server: lifecycle.ForkServer, tmp_path: Path
) -> None:
    argv = [
        "hfta",
        "--workload",
        "mlp",
        "--mode",
        "concurrent",
        "-B",
        "2",
        "--batch-size",
        "8",
        "--steps",
        "2",
    ]
    result = gpurepro(*argv, "--warmup", "1", "--gpu", "cpu", *FAST, "--out", str(tmp_path / "c.csv"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(pd.read_csv(tmp_path / "c.csv")["status"]) == {"ok"}


def _started(marker: Path) -> int:
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline, "the job did not start"
        time.sleep(0.05)
    return int(marker.read_text())


def _sleeper(marker: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gpurepro.forkserver.client", "forkserver_sleeper:main", str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_signal_to_the_client_ends_the_job_with_it(server: lifecycle.ForkServer, tmp_path: Path) -> None:
    client = _sleeper(tmp_path / "pid")
    job = _started(tmp_path / "pid")
    assert psutil.Process(job).ppid() != client.pid  # forked by the server, not started by the client
    client.send_signal(signal.SIGTERM)
    assert client.wait(timeout=30) == 128 + signal.SIGTERM
    assert gone_within([job], 20)


def test_a_client_killed_outright_takes_its_job_with_it(server: lifecycle.ForkServer, tmp_path: Path) -> None:
    client = _sleeper(tmp_path / "pid")
    job = _started(tmp_path / "pid")
    client.kill()
    client.wait(timeout=30)
    assert gone_within([job], 20)


def test_an_unreachable_server_leaves_the_job_to_its_own_interpreter(tmp_path: Path) -> None:
    env = {**os.environ, protocol.ENV_VAR: str(tmp_path / "no-such.sock")}
    result = gpurepro("--version", env=env)
    assert result.returncode == 0 and result.stdout.startswith("gpurepro ")
    assert "unreachable" in result.stderr and "starts its own interpreter" in result.stderr


def test_the_server_leaves_when_its_parent_is_gone(tmp_path: Path) -> None:
    # a parent that starts a server and dies without stopping it (a killed Snakemake)
    parent = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from gpurepro.forkserver import lifecycle
        server = lifecycle.start(Path({str(tmp_path / "log")!r}))
        print(server.process.pid, server.socket, flush=True)
        os._exit(0)
        """
    )
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=300)
    pid, socket = out.stdout.split()
    assert gone_within([int(pid)], 30)
    assert not Path(socket).exists()
