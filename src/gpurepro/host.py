"""The host CPU side of a measuring process: which CPUs it runs on, how many threads torch uses there, and
what the provenance says about the host's CPUs.

A host-paced figure (eager batch-1 inference, small HFTA steps) is how fast one Python thread queues
kernels, so from one process to the next it moves with the core that thread lands on: a core of the
other socket (its memory and the GPU's PCIe root a hop away), a busy SMT sibling, another clock. Pinning
each measuring process to the CPUs NVML names nearest its GPU, with torch's thread count set to match,
removes the part of that spread that is ours to remove; the rest (the governor, the CPU model) is
recorded so a reviewer can see it. Nothing here changes GPU clocks or power limits, and pinning that is
impossible (no NVML, no affinity, too few CPUs) is recorded as "not pinned: <why>", never a failure.

Pinning happens in the job's own process (a job forked from the fork server pins after the fork: the
server itself is never pinned). What the job starts afterwards from its own process (the telemetry
sampler, the SGEMM binary, a fresh interpreter) inherits the CPU set; workers forked from the fork
server instead are handed it through $GPUREPRO_PINNED_CPUS (`run_inheriting_pin`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import nvml

PIN_MODES = ("auto", "off")
# The CPU list ("0-15,32-47") a pinned job hands the worker processes it starts through the fork server.
PINNED_CPUS_VAR = "GPUREPRO_PINNED_CPUS"
# Snakemake sets this to the job's `threads` in every shell command it runs.
THREADS_VAR = "OMP_NUM_THREADS"
# ... and these with it (snakemake/shell.py): what torch, OpenMP and the BLAS libraries of the processes a
# job starts size their thread pools by.
THREAD_COUNT_VARS = (
    THREADS_VAR,
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
# The GPUs ("0,1,2,3") whose measuring jobs run side by side on this host (a placed run,
# placement/placer.py): the GPUs among them that share a CPU set split it, each pinning its jobs to a
# slice of its own.
SLICE_GPUS_VAR = "GPUREPRO_SLICE_GPUS"
CPU_SYSFS = Path("/sys/devices/system/cpu")
PCI_SYSFS = Path("/sys/bus/pci/devices")


def format_cpus(cpus: Iterable[int]) -> str:
    """'0-3,8,10-11': a CPU set as Linux writes CPU lists (taskset, cpuset), short enough for a sidecar."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    start = prev = None
    for cpu in [*ordered, None]:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(runs)


def parse_cpus(text: str) -> set[int]:
    """The CPU set of a Linux CPU list ('0-3,8'); ValueError on anything else."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def allowed_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity mask, e.g. what Slurm or a container gave it)."""
    return set(os.sched_getaffinity(0))


def nearest_cpus(nvml_index: int) -> tuple[set[int] | None, str]:
    """(the CPUs nearest GPU `nvml_index` that this process may use, what "nearest" means), or (None, why
    there are none). Never raises: a job goes on unpinned."""
    try:
        with nvml.session():
            found = nvml.cpu_affinity(nvml.handle(nvml_index))
    except Exception as err:  # noqa: BLE001 - no driver, no GPU, an odd NVML: pinning is never worth a failure
        return None, f"NVML cannot say which CPUs are nearest GPU {nvml_index} ({err})"
    if found is None:
        return None, f"NVML gives no CPU affinity for GPU {nvml_index} (common in VMs)"
    cpus, meaning = found
    allowed = allowed_cpus()
    near = cpus & allowed
    if not near:
        return None, (
            f"none of GPU {nvml_index}'s nearest CPUs ({format_cpus(cpus)}, {meaning}) is among the CPUs "
            f"this process may use ({format_cpus(allowed)})"
        )
    return near, meaning


def core_of(cpu: int, root: Path = CPU_SYSFS) -> int:
    """The physical core of `cpu`, named by its first SMT sibling (the CPU itself where sysfs says nothing):
    a slice keeps siblings together, so no two GPUs' jobs share a core's execution units."""
    with contextlib.suppress(OSError, ValueError):
        return min(parse_cpus((root / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text()))
    return cpu


def cpu_slice(
    gpu: int, cpus_by_gpu: Mapping[int, set[int]], core: Callable[[int], int] | None = None
) -> set[int]:
    """GPU `gpu`'s share of its CPU set, where GPUs of `cpus_by_gpu` (each GPU's nearest CPUs) have the same
    set (two or four GPUs on one NUMA node): the set's cores split into as many runs of consecutive cores,
    as even as they go, the run at `gpu`'s rank among them. A GPU alone on its set keeps all of it."""
    mine = cpus_by_gpu[gpu]
    sharing = sorted(g for g, cpus in cpus_by_gpu.items() if cpus == mine)
    if len(sharing) < 2:
        return set(mine)
    core = core or core_of
    cores: dict[int, set[int]] = {}
    for cpu in mine:
        cores.setdefault(core(cpu), set()).add(cpu)
    ordered = [cores[c] for c in sorted(cores)]
    share, rank = len(sharing), sharing.index(gpu)
    if len(ordered) < share:  # fewer cores than GPUs: slices would be empty; the set stays shared
        return set(mine)
    start, stop = rank * len(ordered) // share, (rank + 1) * len(ordered) // share
    return set().union(*ordered[start:stop])


def slice_gpus() -> list[int]:
    """The GPUs whose jobs run side by side here ($GPUREPRO_SLICE_GPUS), [] outside a placed run."""
    text = os.environ.get(SLICE_GPUS_VAR, "")
    try:
        return sorted(parse_cpus(text)) if text.strip() else []
    except ValueError:
        return []


def gpu_cpu_set(nvml_index: int) -> set[int] | None:
    """The CPUs NVML says are nearest GPU `nvml_index`, among those this process may use; None where NVML or
    the GPU is absent or gives no affinity."""
    return nearest_cpus(nvml_index)[0]


@dataclass(frozen=True)
class PinResult:
    """What pinning did to this process: its CPUs and torch's threads after, or why it did nothing."""

    pinned: bool
    cpus: tuple[int, ...]  # the CPUs the process may run on afterwards
    torch_threads: int | None
    torch_interop_threads: int | None
    note: str  # what was done, or "not pinned: <why>"

    def as_dict(self) -> dict[str, Any]:
        return {
            "pinned": self.pinned,
            "cpus": format_cpus(self.cpus),
            "cpu_count": len(self.cpus),
            "torch_threads": self.torch_threads,
            "torch_interop_threads": self.torch_interop_threads,
            "note": self.note,
        }


# What pin() last did in this process (the provenance reports it), with the process it was done in: a
# process forked afterwards inherits the affinity but did not pin.
_LAST: tuple[int, PinResult] | None = None


def last_pin() -> PinResult | None:
    """What pinning did in this process, None where nothing was asked."""
    return _LAST[1] if _LAST and _LAST[0] == os.getpid() else None


def _record(result: PinResult) -> PinResult:
    global _LAST
    _LAST = (os.getpid(), result)
    return result


def _not_pinned(why: str) -> PinResult:
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    return _record(PinResult(False, tuple(sorted(allowed_cpus())), threads, None, f"not pinned: {why}"))


def _set_affinity_of_every_thread(cpus: set[int]) -> None:
    """os.sched_setaffinity(0) moves only the calling thread; threads the process already has (an OpenMP
    pool, a library's helper) keep their CPUs, so each is moved too. A thread that ends meanwhile is gone."""
    os.sched_setaffinity(0, cpus)
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError):  # ProcessLookupError: it ended after the listing
                os.sched_setaffinity(int(task.name), cpus)


def _set_torch_threads(threads: int) -> tuple[int | None, int | None, str]:
    """torch's intra-op threads to `threads`, and its inter-op threads too where they are not fixed yet
    (torch allows that once, before any inter-op work); (intra, inter-op, a note on what was kept)."""
    try:
        import torch
    except ImportError:
        return None, None, "; torch is not installed"
    torch.set_num_threads(threads)
    note = ""
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # already set, or inter-op work already ran (a forked job, a second pin)
        note = "; torch's inter-op threads were fixed already and kept"
    return torch.get_num_threads(), torch.get_num_interop_threads(), note


def pin(cpus: Iterable[int], threads: int) -> PinResult:
    """Run this process (every thread of it, and what it starts from now on) on `cpus`, with torch's
    threads set to min(len(cpus), threads); what was done, or "not pinned: <why>" where the OS refused."""
    wanted = set(cpus)
    if not wanted:
        return _not_pinned("no CPUs to pin to")
    try:
        _set_affinity_of_every_thread(wanted)
    except OSError as err:  # EINVAL: none of them allowed here; EPERM: a sandbox that forbids it
        return _not_pinned(f"the OS refused CPUs {format_cpus(wanted)} ({err})")
    count = max(1, min(len(wanted), threads))
    intra, inter, kept = _set_torch_threads(count)
    return _record(
        PinResult(
            True,
            tuple(sorted(allowed_cpus())),
            intra,
            inter,
            f"pinned to {len(wanted)} CPU(s) {format_cpus(wanted)}, {count} torch thread(s){kept}",
        )
    )


def job_threads() -> int | None:
    """The threads the job was given: Snakemake's `threads` (which it puts in OMP_NUM_THREADS), else None
    (a command run by hand)."""
    value = os.environ.get(THREADS_VAR, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def _slice_for_job(nvml_index: int, cpus: set[int], meaning: str, asked: int | None) -> tuple[set[int], str]:
    """The CPUs a job of GPU `nvml_index` pins to: its GPU's slice where GPUs run side by side here and
    share `cpus` ($GPUREPRO_SLICE_GPUS), unless the job asked for more threads than the slice holds (a job
    that takes every core runs with nothing beside it, so it keeps the whole set); else all of `cpus`."""
    gpus = slice_gpus()
    if nvml_index not in gpus:
        return cpus, meaning
    others = {g: nearest_cpus(g)[0] for g in gpus if g != nvml_index}
    by_gpu = {nvml_index: cpus, **{g: found for g, found in others.items() if found is not None}}
    part = cpu_slice(nvml_index, by_gpu)
    sharing = sum(1 for found in by_gpu.values() if found == cpus)
    if part == cpus:
        return cpus, meaning
    if asked is not None and asked > len(part):
        return cpus, f"{meaning}, all of it: the job holds its {asked} cores, with nothing beside it"
    return part, f"slice {format_cpus(part)} of {meaning} {format_cpus(cpus)}, shared by {sharing} GPUs here"


def pin_for_gpu(mode: str, nvml_index: int | None, torch_threads: int | None = None) -> PinResult:
    """The job's pinning as host.pin says (_pin_near_gpu), with torch's threads set to `torch_threads`
    where it is given, pinned or not, in this process and in those it starts from now on (HFTA's
    concurrent and MPS workers): a placed job that keeps the host to itself holds every core so that
    nothing runs beside it, and measures with the threads its point has in the one-GPU plan, where the
    job cannot be pinned (host.pin off, no NVML affinity) too. Without `torch_threads`, torch keeps the
    job's threads ($OMP_NUM_THREADS) where it is not pinned."""
    result = _pin_near_gpu(mode, nvml_index, torch_threads)
    if torch_threads is None:
        return result
    if not result.pinned:
        intra, inter, kept = _set_torch_threads(torch_threads)
        result = _record(
            replace(
                result,
                torch_threads=intra,
                torch_interop_threads=inter,
                note=f"{result.note}; {torch_threads} torch thread(s), the one-GPU plan's{kept}",
            )
        )
    # a worker, from a fresh interpreter or forked from the fork server (forkserver/server.py), sizes its
    # thread pools by these: as this process's torch has them (at most its CPUs where it was pinned)
    os.environ.update(dict.fromkeys(THREAD_COUNT_VARS, str(result.torch_threads or torch_threads)))
    return result


def _pin_near_gpu(mode: str, nvml_index: int | None, torch_threads: int | None) -> PinResult:
    """With `auto`, pin to the CPUs nearest the job's GPU (its slice of them where several GPUs here
    measure side by side and share them: _slice_for_job) with torch's threads set to `torch_threads`, else
    the job's threads (all of those CPUs for a command run by hand); otherwise, or where that cannot be,
    "not pinned: <why>". Never pins to fewer CPUs than the job's threads: a job Snakemake gave more cores
    than the GPU's CPUs hold keeps the CPUs it has. The job's threads choose the CPUs, `torch_threads`
    only how many of them torch uses."""
    if mode == "off":
        return _not_pinned("host.pin is off")
    if nvml_index is None:
        return _not_pinned("the job measures on the CPU; there is no GPU to be near")
    cpus, meaning = nearest_cpus(nvml_index)
    if cpus is None:
        return _not_pinned(meaning)
    asked = job_threads()
    if asked is not None and len(cpus) < asked:
        return _not_pinned(
            f"the {len(cpus)} CPU(s) nearest GPU {nvml_index} ({format_cpus(cpus)}, {meaning}) are fewer "
            f"than the job's {asked} threads"
        )
    cpus, meaning = _slice_for_job(nvml_index, cpus, meaning, asked)
    result = pin(cpus, torch_threads or asked or len(cpus))
    if result.pinned:
        result = _record(replace(result, note=f"{result.note} ({meaning})"))
    return result


def inherited_environment() -> dict[str, str]:
    """What a worker process started through the fork server needs to run on this job's CPUs: a forked
    worker is the server's child and has the server's affinity, not this process's. Empty when this
    process was not pinned."""
    done = last_pin()
    return {PINNED_CPUS_VAR: format_cpus(done.cpus)} if done and done.pinned else {}


def run_inheriting_pin(argv: list[str]) -> int:
    """Entry point `gpurepro.host:run_inheriting_pin ENTRY ARGS...`: take the job's CPUs from
    $GPUREPRO_PINNED_CPUS (the whole set: workers are never pinned narrower than the job's CPUs, however
    many there are), then run ENTRY (module:function) with ARGS. Where the set cannot be applied, the
    worker runs where it is."""
    text = os.environ.get(PINNED_CPUS_VAR)
    if text:
        with contextlib.suppress(ValueError, OSError):
            _set_affinity_of_every_thread(parse_cpus(text))
    module, _, function = argv[0].partition(":")
    return int(getattr(importlib.import_module(module), function)(argv[1:]) or 0)


def cpu_model() -> str:
    """The CPU's marketing name (/proc/cpuinfo), else what the platform says."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def frequency_governors(root: Path = CPU_SYSFS) -> str:
    """The cpufreq governors of the host's CPUs ('performance', or 'performance,powersave' where they
    differ); 'unavailable' where there is no cpufreq (many VMs and containers)."""
    seen = set()
    for path in root.glob("cpu[0-9]*/cpufreq/scaling_governor"):
        with contextlib.suppress(OSError):
            seen.add(path.read_text().strip())
    seen.discard("")
    return ",".join(sorted(seen)) if seen else "unavailable"


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """NVML's PCI bus id ('00000000:17:00.0') as sysfs names the device ('0000:17:00.0')."""
    domain, _, rest = nvml_bus_id.strip().lower().partition(":")
    return f"{domain[-4:]:0>4}:{rest}"


def numa_node(nvml_bus_id: str | None, root: Path = PCI_SYSFS) -> int | None:
    """The NUMA node of a PCI device, None where unreadable or not reported (-1)."""
    if not nvml_bus_id:
        return None
    try:
        node = int((root / sysfs_bus_id(nvml_bus_id) / "numa_node").read_text())
    except (OSError, ValueError):
        return None
    return None if node < 0 else node


def describe_host(gpu_bus_ids: Sequence[str | None] = ()) -> dict[str, Any]:
    """The host's CPU side of a measurement, for the provenance: CPU model and count, frequency
    governor, the CPUs this process may run on, the GPUs' NUMA nodes, torch's threads, and the pinning."""
    torch = sys.modules.get("torch")  # only where the job uses it: importing it here costs seconds
    done = last_pin()
    pinning = done.as_dict() if done else {"pinned": False, "note": "not pinned: this process did not ask"}
    allowed = allowed_cpus()
    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "frequency_governor": frequency_governors(),
        "affinity": format_cpus(allowed),
        "affinity_count": len(allowed),
        "gpu_numa_nodes": {bus: numa_node(bus) for bus in gpu_bus_ids if bus},
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        "torch_interop_threads": torch.get_num_interop_threads() if torch is not None else None,
        "pinning": pinning,
    }
