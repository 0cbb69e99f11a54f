"""The host CPU side of a measuring process (gpurepro.host): NVML's CPU masks decoded, the host described
for the provenance, pinning that really moves a process (tried in a child, so this one keeps its CPUs),
the policy that never fails a job over it, config.host.pin validated and passed to every measuring job,
and the sidecar of a measurement carrying it all."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpurepro import host, nvml

from .conftest import ROOT, import_installable, run_gpurepro, run_snakemake

FAST = ["--idle-seconds", "0.2", "--energy-window-s", "0.2", "--cooldown-max-wait-s", "0", "--rate-hz", "100"]
ALLOWED = sorted(os.sched_getaffinity(0))


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_nvml_cpu_masks_decode_to_cpu_indices() -> None:
    assert nvml.cpus_of_mask([0b1011, 1 << 3]) == {0, 1, 3, 67}
    assert nvml.cpus_of_mask([0, 0]) == set()
    assert nvml.cpus_of_mask([1 << 31, 1], word_bits=32) == {31, 32}
    assert nvml.cpus_of_mask([2**64 - 1]) == set(range(64))


def test_nvml_affinity_prefers_the_numa_node_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ctypes arrays pynvml returns, as NVML fills them; an empty node mask (some VMs) falls back."""
    words = ctypes.c_ulonglong * ((os.cpu_count() or 1) // 64 + 1)
    node = words(0b110)
    ideal = words(0b1111)
    monkeypatch.setattr(nvml.pynvml, "nvmlDeviceGetCpuAffinityWithinScope", lambda h, n, scope: node)
    monkeypatch.setattr(nvml.pynvml, "nvmlDeviceGetCpuAffinity", lambda h, n: ideal)
    assert nvml.cpu_affinity(object()) == ({1, 2}, "the GPU's NUMA node")
    node[0] = 0
    assert nvml.cpu_affinity(object()) == ({0, 1, 2, 3}, "NVML's ideal CPUs for the GPU")
    ideal[0] = 0
    assert nvml.cpu_affinity(object()) is None


def test_cpu_lists_read_and_write_as_linux_writes_them() -> None:
    assert host.format_cpus([3, 0, 1, 2, 8, 10, 11]) == "0-3,8,10-11"
    assert host.format_cpus([]) == ""
    assert host.parse_cpus("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert host.parse_cpus(host.format_cpus(ALLOWED)) == set(ALLOWED)
    with pytest.raises(ValueError):
        host.parse_cpus("zero")


def test_nvml_bus_ids_map_to_sysfs_names(tmp_path: Path) -> None:
    assert host.sysfs_bus_id("00000000:17:00.0") == "0000:17:00.0"
    assert host.sysfs_bus_id("0000:AB:00.0") == "0000:ab:00.0"
    (tmp_path / "0000:17:00.0").mkdir()
    (tmp_path / "0000:17:00.0" / "numa_node").write_text("1\n")
    (tmp_path / "0000:18:00.0").mkdir()
    (tmp_path / "0000:18:00.0" / "numa_node").write_text("-1\n")
    assert host.numa_node("00000000:17:00.0", tmp_path) == 1
    assert host.numa_node("00000000:18:00.0", tmp_path) is None  # not reported
    assert host.numa_node("00000000:19:00.0", tmp_path) is None and host.numa_node(None, tmp_path) is None


def test_frequency_governors_are_the_set_seen_or_unavailable(tmp_path: Path) -> None:
    assert host.frequency_governors(tmp_path) == "unavailable"
    for cpu, governor in enumerate(["performance", "powersave", "performance"]):
        folder = tmp_path / f"cpu{cpu}" / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_governor").write_text(f"{governor}\n")
    assert host.frequency_governors(tmp_path) == "performance,powersave"


def test_describe_host_on_this_machine() -> None:
    described = host.describe_host()
    assert set(described) == {
        "cpu_model", "logical_cpus", "frequency_governor", "affinity", "affinity_count", "gpu_numa_nodes",
        "torch_threads", "torch_interop_threads", "pinning",
    }  # fmt: skip
    assert described["cpu_model"] and described["cpu_model"] != "unknown"
    assert described["logical_cpus"] == os.cpu_count() >= described["affinity_count"] == len(ALLOWED)
    assert host.parse_cpus(described["affinity"]) == set(ALLOWED)
    assert described["frequency_governor"] == "unavailable" or all(
        g.isidentifier() for g in described["frequency_governor"].split(",")
    )
    assert described["gpu_numa_nodes"] == {}
    import torch  # noqa: F401 - describe_host reports torch's threads once the job has torch

    threads = host.describe_host()["torch_threads"]
    assert isinstance(threads, int) and threads >= 1
    assert described["pinning"]["pinned"] is False


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two usable CPUs to pin to a subset")
def test_pin_moves_the_process_and_sets_torchs_threads() -> None:
    """In a child process, so that this one keeps its CPUs: every thread of it moves (one started before
    pinning too), torch's threads are min(CPUs, asked), and the provenance then says so."""
    result = _python(
        f"""
        import json, os, threading, torch
        from gpurepro import host
        early = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
        early.start()
        done = host.pin({{{ALLOWED[-1]}}}, 4)
        print(json.dumps({{
            "affinity": sorted(os.sched_getaffinity(0)),
            "early": sorted(os.sched_getaffinity(early.native_id)),
            "threads": torch.get_num_threads(),
            "result": done.as_dict(),
            "described": host.describe_host()["pinning"],
            "inherited": host.inherited_environment(),
        }}))
        """
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["affinity"] == seen["early"] == [ALLOWED[-1]]
    assert seen["threads"] == 1  # one CPU, though 4 were asked
    assert seen["result"]["pinned"] and seen["result"]["cpus"] == str(ALLOWED[-1])
    assert seen["result"]["torch_threads"] == 1 and seen["described"] == seen["result"]
    assert seen["inherited"] == {host.PINNED_CPUS_VAR: str(ALLOWED[-1])}
    assert sorted(os.sched_getaffinity(0)) == ALLOWED  # this process kept its CPUs


def affinity_entry(argv: list[str]) -> int:
    """An entry point for run_inheriting_pin: prints this process's CPUs and its arguments."""
    print(json.dumps({"affinity": sorted(os.sched_getaffinity(0)), "argv": argv}))
    return 0


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two usable CPUs to pin to a subset")
def test_a_worker_started_through_the_pin_entry_takes_the_jobs_cpus() -> None:
    """How HFTA's workers forked from the fork server (which has its own CPUs) get the job's."""
    code = f"from gpurepro import host; host.run_inheriting_pin(['{__name__}:affinity_entry', 'x'])"
    pinned = _python(code, {host.PINNED_CPUS_VAR: str(ALLOWED[0])})
    assert pinned.returncode == 0, pinned.stderr
    assert json.loads(pinned.stdout) == {"affinity": [ALLOWED[0]], "argv": ["x"]}
    env = {k: v for k, v in os.environ.items() if k != host.PINNED_CPUS_VAR}
    unpinned = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert json.loads(unpinned.stdout)["affinity"] == ALLOWED


def test_the_policy_never_fails_and_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned_to: list[tuple[set[int], int]] = []

    def fake_pin(cpus: set[int], threads: int) -> host.PinResult:
        pinned_to.append((cpus, threads))
        return host.PinResult(True, tuple(sorted(cpus)), threads, threads, f"pinned to {len(cpus)} CPU(s)")

    monkeypatch.setattr(host, "pin", fake_pin)
    monkeypatch.setattr(host, "_LAST", None)  # what this test records stays in this test
    assert host.pin_for_gpu("off", 0).note == "not pinned: host.pin is off"
    assert host.pin_for_gpu("auto", None).note.startswith("not pinned: the job measures on the CPU")
    no_affinity = (None, "NVML gives no CPU affinity for GPU 0")
    monkeypatch.setattr(host, "nearest_cpus", lambda index: no_affinity)
    assert host.pin_for_gpu("auto", 0).note == "not pinned: NVML gives no CPU affinity for GPU 0"
    assert host.last_pin() is not None and not host.last_pin().pinned
    monkeypatch.setattr(host, "nearest_cpus", lambda index: ({0, 1, 2, 3}, "the GPU's NUMA node"))
    monkeypatch.setenv(host.THREADS_VAR, "8")  # Snakemake gave the job more threads than the GPU's CPUs
    assert host.pin_for_gpu("auto", 0).note == (
        "not pinned: the 4 CPU(s) nearest GPU 0 (0-3, the GPU's NUMA node) are fewer than the job's 8 threads"
    )
    assert pinned_to == []
    monkeypatch.setenv(host.THREADS_VAR, "1")
    done = host.pin_for_gpu("auto", 0)
    assert pinned_to == [({0, 1, 2, 3}, 1)] and done.note == "pinned to 4 CPU(s) (the GPU's NUMA node)"
    monkeypatch.delenv(host.THREADS_VAR)  # run by hand: torch gets every one of the GPU's CPUs
    host.pin_for_gpu("auto", 0)
    assert pinned_to[-1] == ({0, 1, 2, 3}, 4)


def test_nearest_cpus_without_a_gpu_is_none_with_the_reason() -> None:
    cpus, why = host.nearest_cpus(0)
    if cpus is None:  # this machine: no driver or no GPU
        assert "GPU 0" in why and host.gpu_cpu_set(0) is None
    else:
        assert cpus <= set(ALLOWED)


def test_pin_refused_by_the_os_is_recorded_not_raised() -> None:
    result = _python(
        """
        from gpurepro import host
        print(host.pin({10**6}, 1).note)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("not pinned: the OS refused CPUs 1000000")


def test_a_measurement_sidecar_carries_the_host_cpu_section(tmp_path: Path) -> None:
    out = tmp_path / "torch_n64.csv"
    result = run_gpurepro("sgemm", "64", "2", "cpu", *FAST, "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "host: not pinned: the job measures on the CPU" in result.stderr
    record = json.loads(out.with_name("torch_n64.provenance.json").read_text())
    section = record["host_cpu"]
    assert section["cpu_model"] and section["logical_cpus"] == os.cpu_count()
    assert host.parse_cpus(section["affinity"]) == set(ALLOWED) and section["frequency_governor"]
    assert section["torch_threads"] >= 1
    assert section["pinning"]["pinned"] is False
    assert section["pinning"]["note"].startswith("not pinned: the job measures on the CPU")
    off = tmp_path / "off.csv"
    result = run_gpurepro("sgemm", "64", "2", "cpu", *FAST, "--pin", "off", "--out", str(off))
    assert result.returncode == 0, result.stderr[-2000:]
    pinning = json.loads(off.with_name("off.provenance.json").read_text())["host_cpu"]["pinning"]
    assert pinning["note"] == "not pinned: host.pin is off"


def test_every_measuring_job_is_given_the_pin_setting(workflow_copy: Path) -> None:
    planned = run_snakemake("-n", "--cores", "1", "--config", "device=h100", "quick=true", cwd=workflow_copy)
    assert planned.returncode == 0, planned.stderr[-2000:]
    # every measuring command takes the telemetry options (training and the reference rates, which are no
    # measurement of the harness's, take only the cool-down folder)
    commands = [line for line in planned.stdout.splitlines() if "--rate-hz" in line]
    assert commands and all("--pin auto" in line for line in commands)
    off = run_snakemake("-n", "--cores", "1", "--config", "device=h100", "host={pin: off}", cwd=workflow_copy)
    assert off.returncode == 0, off.stderr[-2000:]
    assert "--pin off" in off.stdout and "--pin auto" not in off.stdout


def test_a_bad_pin_setting_fails_before_any_job_naming_the_key(workflow_copy: Path) -> None:
    result = run_snakemake("-n", "--cores", "1", "--config", "host={pin: sometimes}", cwd=workflow_copy)
    assert result.returncode != 0
    assert "key host.pin: 'sometimes' is not one of ['auto', 'off', False]" in result.stdout + result.stderr


# A two-socket host as Linux numbers it: cores 0-7 on socket 0 (CPUs 0-7, their SMT siblings 16-23),
# cores 8-15 on socket 1 (8-15, siblings 24-31); GPUs 0 and 1 on socket 0, GPUs 2 and 3 on socket 1.
SOCKET0, SOCKET1 = set(range(8)) | set(range(16, 24)), set(range(8, 16)) | set(range(24, 32))
FOUR_GPUS = {0: SOCKET0, 1: SOCKET0, 2: SOCKET1, 3: SOCKET1}


def sibling_core(cpu: int) -> int:
    return cpu % 16


def test_gpus_sharing_a_socket_split_its_cores_keeping_siblings_together() -> None:
    slices = {g: host.cpu_slice(g, FOUR_GPUS, sibling_core) for g in FOUR_GPUS}
    assert slices[0] == {0, 1, 2, 3, 16, 17, 18, 19}
    assert slices[1] == {4, 5, 6, 7, 20, 21, 22, 23}
    assert slices[2] == {8, 9, 10, 11, 24, 25, 26, 27}
    # disjoint, and together the whole host: no GPU's jobs share a core with another's
    assert sum(len(s) for s in slices.values()) == 32 and set().union(*slices.values()) == SOCKET0 | SOCKET1
    # a GPU alone on its set (GPU 2 without GPU 3 selected) keeps all of it
    assert host.cpu_slice(2, {0: SOCKET0, 1: SOCKET0, 2: SOCKET1}, sibling_core) == SOCKET1
    # three GPUs on eight cores: 2, 3 and 3 cores, as even as they go
    three = {g: SOCKET0 for g in range(3)}
    assert [len(host.cpu_slice(g, three, sibling_core)) // 2 for g in range(3)] == [2, 3, 3]


def test_a_placed_job_pins_to_its_slice_unless_it_takes_every_core(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned_to: list[set[int]] = []
    torch_threads: list[int] = []

    def fake_pin(cpus: set[int], threads: int) -> host.PinResult:
        pinned_to.append(cpus)
        torch_threads.append(threads)
        return host.PinResult(True, tuple(sorted(cpus)), threads, threads, f"pinned to {len(cpus)} CPU(s)")

    monkeypatch.setattr(host, "pin", fake_pin)
    monkeypatch.setattr(host, "_LAST", None)
    monkeypatch.setattr(host, "nearest_cpus", lambda index: (FOUR_GPUS[index], "the GPU's NUMA node"))
    monkeypatch.setattr(host, "core_of", sibling_core)
    for var in host.THREAD_COUNT_VARS:  # --torch-threads sets them: restored after the test
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(host.THREADS_VAR, "1")
    monkeypatch.delenv(host.SLICE_GPUS_VAR, raising=False)
    host.pin_for_gpu("auto", 1)  # not a placed run: the whole NUMA set, as before
    assert pinned_to[-1] == SOCKET0
    monkeypatch.setenv(host.SLICE_GPUS_VAR, "0-3")
    done = host.pin_for_gpu("auto", 1)
    assert pinned_to[-1] == {4, 5, 6, 7, 20, 21, 22, 23}
    assert "slice 4-7,20-23 of the GPU's NUMA node 0-7,16-23, shared by 2 GPUs here" in done.note
    monkeypatch.setenv(host.THREADS_VAR, "16")  # a job that takes every core has the host to itself
    done = host.pin_for_gpu("auto", 1)
    assert pinned_to[-1] == SOCKET0 and "the job holds its 16 cores, with nothing beside it" in done.note
    assert torch_threads[-1] == 16
    # ... and measures with the one-GPU plan's torch threads where the rule says (--torch-threads)
    done = host.pin_for_gpu("auto", 1, torch_threads=1)
    assert pinned_to[-1] == SOCKET0 and torch_threads[-1] == 1
    # ... and so do the processes it starts (HFTA's workers): the threads its torch has
    assert done.torch_threads == 1 and {os.environ[var] for var in host.THREAD_COUNT_VARS} == {"1"}
    monkeypatch.setenv(host.SLICE_GPUS_VAR, "0,2")  # GPU 1 is not among the GPUs measuring side by side
    monkeypatch.setenv(host.THREADS_VAR, "1")
    host.pin_for_gpu("auto", 1)
    assert pinned_to[-1] == SOCKET0


def test_core_of_reads_the_siblings_from_sysfs(tmp_path: Path) -> None:
    (tmp_path / "cpu17" / "topology").mkdir(parents=True)
    (tmp_path / "cpu17" / "topology" / "thread_siblings_list").write_text("1,17\n")
    assert host.core_of(17, tmp_path) == 1
    assert host.core_of(5, tmp_path) == 5  # nothing in sysfs: the CPU is its own core


def test_torch_threads_hold_unpinned_and_in_the_processes_the_job_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A placed job that keeps the host (Snakemake set 16 threads) measures with the one-GPU plan's
    --torch-threads where it cannot be pinned too, and so do the workers it starts (HFTA's concurrent and
    MPS processes take their threads from the environment)."""
    torch = import_installable("torch")
    for var in host.THREAD_COUNT_VARS:
        monkeypatch.setenv(var, "16")
    monkeypatch.setattr(host, "_LAST", None)
    before = torch.get_num_threads()
    try:
        done = host.pin_for_gpu("off", 0, torch_threads=2)
        assert not done.pinned and done.torch_threads == torch.get_num_threads() == 2
        assert done.note.startswith("not pinned: host.pin is off; 2 torch thread(s), the one-GPU plan's")
        assert {os.environ[var] for var in host.THREAD_COUNT_VARS} == {"2"}
        child = subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
            capture_output=True, text=True, check=True, timeout=300,
        )  # fmt: skip
        assert child.stdout.strip() == "2"
    finally:
        torch.set_num_threads(before)
    # without --torch-threads nothing changes: the job's own threads, as Snakemake set them
    done = host.pin_for_gpu("off", 0)
    assert done.note == "not pinned: host.pin is off" and os.environ[host.THREADS_VAR] == "2"
