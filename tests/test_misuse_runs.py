"""Misuse of a run ends in one clear line: the SLURM profile without its plugin, a GPU profile the machine
does not have, a run stopped by Ctrl-C or killed outright; and a finished run names its verdict."""

from __future__ import annotations

import base64
import logging
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from gpurepro import profiles
from gpurepro.errors import GpureproError
from gpurepro.runs import gpu_check, interrupt, stale_lock, verdict_headlines

from .conftest import HAVE_GPU, ROOT, run_snakemake
from .test_profiles import gpu

PLUGIN = "snakemake_executor_plugin_slurm"
# Snakemake as it runs where the SLURM executor plugin is not installed: the plugin can neither be found
# (importlib's find_spec, which the profile asks) nor listed among the executors (pkgutil, which
# Snakemake's plugin registry scans).
WITHOUT_SLURM_PLUGIN = f"""
import pkgutil, sys
sys.modules[{PLUGIN!r}] = None
every_module = pkgutil.iter_modules
pkgutil.iter_modules = lambda *args, **kwargs: (
    m for m in every_module(*args, **kwargs) if m.name != {PLUGIN!r}
)
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[1:]]
main()
"""


def test_the_slurm_profile_without_its_plugin_names_the_extra_in_one_line(workflow_copy: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_SLURM_PLUGIN, "--profile", "profiles/slurm", "-n"],
        cwd=workflow_copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    # Snakemake's own line naming the profiles it read, then ours alone: no usage, no "invalid choice"
    assert result.stderr.strip().splitlines()[1:] == [
        "profiles/slurm needs the SLURM executor plugin, which the project's slurm extra installs: "
        "pip install -e '.[slurm]'"
    ]


def test_the_slurm_extra_brings_the_plugin_and_the_test_extra_brings_the_slurm_extra() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'slurm = ["snakemake-executor-plugin-slurm' in pyproject
    test_extra = pyproject[pyproject.index("\ntest = [") :].split("]\n", 1)[0]
    assert '"gpurepro[slurm]"' in test_extra
    assert "pip install -c constraints.txt -e '.[slurm]'" in (ROOT / "README.md").read_text()


H100 = profiles.load_profile("h100")
NO_NVML = "NVML could not start (NVML Shared Library Not Found); no NVIDIA driver or GPU here"


def test_a_gpu_profile_without_nvml_stops_naming_the_device_and_what_nvml_found() -> None:
    with pytest.raises(GpureproError) as stopped:
        gpu_check.check_start(H100, "all", [], NO_NVML, "error")
    message = str(stopped.value)
    assert message.startswith(
        f"device=h100 needs an NVIDIA GPU of that model, but NVML finds none here: {NO_NVML}"
    )
    assert "snakemake -n --config device=h100" in message
    assert "\n" not in message


def test_gpus_that_do_not_exist_stop_the_run_and_warn_mode_does_not_excuse_them() -> None:
    found = [gpu("NVIDIA H100 80GB HBM3", 0), gpu("NVIDIA H100 80GB HBM3", 1)]
    with pytest.raises(
        GpureproError, match=r"device=h100: config gpus=\[0, 1, 2, 3\]: GPU\(s\) \[2, 3\] do not"
    ):
        gpu_check.check_start(H100, [0, 1, 2, 3], found, "", "warn")
    assert gpu_check.check_start(H100, [1], found, "", "error") == []
    assert gpu_check.check_start(H100, "all", found, "", "error") == []


def test_another_model_stops_the_run_unless_device_check_is_warn() -> None:
    found = [gpu("NVIDIA H100 80GB HBM3", 0), gpu("NVIDIA A100-SXM4-80GB", 1)]
    with pytest.raises(GpureproError, match="device=h100: GPU 1 is 'NVIDIA A100-SXM4-80GB' .profile 'a100'."):
        gpu_check.check_start(H100, "all", found, "", "error")
    assert gpu_check.check_start(H100, [0], found, "", "error") == []
    [warning] = gpu_check.check_start(H100, "all", found, "", "warn")
    assert warning.startswith("device=h100: GPU 1 is 'NVIDIA A100-SXM4-80GB'")


def test_the_cpu_profile_needs_no_gpu() -> None:
    assert gpu_check.check_start(profiles.load_profile("cpu"), "all", [], NO_NVML, "error") == []


@pytest.mark.pipeline
@pytest.mark.skipif(HAVE_GPU, reason="checks a machine without NVML")
def test_a_real_run_for_a_gpu_not_here_stops_at_start_and_writes_nothing(workflow_copy: Path) -> None:
    """The plan is made (a dry run plans it too); the run stops before its first job, with one line."""
    result = run_snakemake("sgemm", "--cores", "1", "--config", "device=h100", cwd=workflow_copy)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("device=h100 needs an NVIDIA GPU of that model, but NVML finds none here: ")
    assert "Traceback" not in result.stderr + result.stdout
    assert not (workflow_copy / "results").exists()
    planned = run_snakemake(
        "sgemm", "-n", "--cores", "1", "--config", "device=h100", "gpus=[0,1]", cwd=workflow_copy
    )
    assert planned.returncode == 0, planned.stderr
    assert "sgemm_run" in planned.stdout
    assert not (workflow_copy / "results").exists()


def test_the_headlines_are_read_back_from_the_per_paper_table_of_the_verdict_written() -> None:
    markdown = "\n".join(
        [
            "# Reproduction verdict: profile cpu",
            "## Per paper",
            "",
            "| paper | verdict | held | not measured because |",
            "|---|---|---|---|",
            "| A \\| B (2024) | **not measured (0 of 2 claims testable here)** | 0 | needs a GPU |",
            "| C | **reproduced (2 of 2 claims testable here)** | 2 |  |",
            "",
            "## Claims of the papers",
            "| a | **b** |",
        ]
    )
    assert verdict_headlines.headlines(markdown) == [
        ("A | B (2024)", "not measured (0 of 2 claims testable here)"),
        ("C", "reproduced (2 of 2 claims testable here)"),
    ]


def test_a_reference_runs_verdict_reads_one_headline_per_paper(tmp_path: Path) -> None:
    with tarfile.open(ROOT / "reference-runs" / "h200-quick-2026-11-28.tar.gz") as archive:
        verdict = archive.extractfile("h200/verdict.md")
        assert verdict is not None
        (tmp_path / "verdict.md").write_bytes(verdict.read())
    said = verdict_headlines.announcement(tmp_path / "verdict.md").splitlines()
    assert (
        said[0] == f"gpurepro: the verdict is {tmp_path / 'verdict.md'} (verdict.html beside it); per paper:"
    )
    verdicts = "reproduced|partially reproduced|not reproduced|too few claims testable here|not measured"
    assert len(said) > 2
    assert all(re.fullmatch(rf"  .+: ({verdicts}) \(\d+ of \d+ .*\)", line) for line in said[1:])


def signalled_run(workflow: Path, sig: signal.Signals, *args: str) -> tuple[int, str]:
    """snakemake `args` in its own session, as a terminal starts it; once its first measuring job has
    started, `sig` goes to the whole group (Ctrl-C: SIGINT; a dropped session or `kill -9`: SIGKILL).
    Returns the exit status and everything said after the signal."""
    process = subprocess.Popen(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workflow,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # Ctrl-C's default, as a terminal gives it: started in the background of a script, this test
        # would pass on SIGINT ignored, which snakemake (rightly) keeps ignoring
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    said: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        said.append(line)
        if line.startswith("Shell command: gpurepro sgemm "):
            time.sleep(3)  # inside the job's measurement
            os.killpg(process.pid, sig)
            break
    after = process.stdout.read()
    return process.wait(timeout=300), after


@pytest.mark.pipeline
def test_ctrl_c_ends_in_one_line_and_a_killed_run_says_how_to_resume(workflow_copy: Path) -> None:
    target = ["sgemm", "--cores", "1"]
    status, said = signalled_run(workflow_copy, signal.SIGINT, *target)
    assert status != 0
    # (Snakemake's "Select jobs to execute..." may follow the job's start before the signal)
    assert said.strip().splitlines()[-1] == interrupt.INTERRUPTED
    for noise in ("Error in rule", "Traceback", "KeyboardInterrupt", "did not complete"):
        assert noise not in said

    status, said = signalled_run(workflow_copy, signal.SIGKILL, *target)
    assert status == -signal.SIGKILL
    after_kill = run_snakemake(*target, cwd=workflow_copy)
    assert after_kill.returncode == 1
    hint = after_kill.stderr.strip().splitlines()[-1]
    assert hint.startswith("gpurepro: an earlier run in this folder was killed before it finished")
    assert "snakemake --unlock" in hint and "--rerun-incomplete" in hint

    unlocked = run_snakemake("--unlock", "--cores", "1", cwd=workflow_copy)
    assert unlocked.returncode == 0 and "gpurepro: an earlier run" not in unlocked.stderr
    resumed = run_snakemake(*target, "--rerun-incomplete", cwd=workflow_copy)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (workflow_copy / "results" / "cpu" / "tables" / "sgemm.csv").is_file()
    assert "gpurepro: an earlier run" not in resumed.stderr


def test_a_lock_left_with_no_snakemake_running_is_named_with_both_commands(tmp_path: Path) -> None:
    assert stale_lock.stale_lock_message(tmp_path) is None
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / ".snakemake" / "locks" / "0.output.lock").write_text("results/cpu/tables/sgemm.csv\n")
    incomplete = tmp_path / ".snakemake" / "incomplete"
    incomplete.mkdir()
    (incomplete / base64.urlsafe_b64encode(b"results/cpu/sgemm/raw/torch_n512.csv").decode()).touch()
    message = stale_lock.stale_lock_message(tmp_path)
    assert message is not None
    assert (
        "1 outputs it was writing are marked incomplete (e.g. results/cpu/sgemm/raw/torch_n512.csv)"
        in message
    )
    assert "snakemake --unlock, then your command again with --rerun-incomplete" in message
    assert stale_lock.is_snakemake(["/venv/bin/python3", "/venv/bin/snakemake", "--cores", "4"])
    assert stale_lock.is_snakemake(["python", "-m", "snakemake", "-n"])
    assert not stale_lock.is_snakemake(["bash", "-c", "gpurepro sgemm 512 --out results/x.csv"])


def test_after_sigint_the_console_says_one_line_and_snakemake_stops_as_before(capsys) -> None:
    console = logging.StreamHandler(sys.stderr)
    previous = signal.getsignal(signal.SIGINT)
    try:
        # Python's own handler, whatever this test process was started with: a pytest started in the
        # background of a script inherits SIGINT ignored, which watch_interrupts leaves ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)
        watch = interrupt.watch_interrupts([console])
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    finally:
        signal.signal(signal.SIGINT, previous)
    record = logging.LogRecord(
        "snakemake", logging.ERROR, __file__, 1, "Error in rule sgemm_run:", None, None
    )
    assert watch.interrupted and not console.filter(record)
    assert capsys.readouterr().err == interrupt.INTERRUPTED + "\n"
