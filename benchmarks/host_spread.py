"""Between-process spread of host-paced inference points, unpinned against pinned, and what sets it apart.

Eager batch-1 inference waits on the host: its latency is how fast one Python thread queues some hundred
kernels. From one fresh process to the next on one host that moves by up to 2x, where the same forward
replayed as a CUDA graph repeats to 0.3%. This script starts `--processes` fresh processes per condition,
the conditions interleaved (unpinned, pinned, unpinned, ...) so a drift of the host spreads over both,
and in each one times eager DeiT-T and BERT-B s128 at batch 1 in fp16 autocast (the project's own model
builders, runners and blocked Timer), beside what might tell a fast process from a slow one:

- a pure-Python loop timed before and after (the CPU's own speed for this thread: frequency, a busy SMT
  sibling, a stolen vCPU);
- the CPUs the main thread ran on (sampled every 20 ms), their SMT siblings' and the whole host's busy
  share over the timing (/proc/stat), their clock (cpufreq or /proc/cpuinfo) and the host's steal time;
- the process's voluntary and involuntary context switches over the timing.

Pinned means the project's pinning (gpurepro.host: the CPUs NVML names nearest the GPU, torch's threads
set to them). It prints one line per process and, per point and condition, the median and the geometric
SD over processes; `--out` keeps the rows as CSV.

    python benchmarks/host_spread.py --processes 8 --gpu 0 --out host_spread.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gpurepro.process_stats import geometric_sd

POINTS = (("deit-t", 0), ("bert-b", 128))  # (model, sequence length: 0 for DeiT)
CONDITIONS = ("unpinned", "pinned")


def _cpu_times() -> dict[int, tuple[float, float, float]]:
    """Per CPU: busy and total jiffies and steal, from /proc/stat."""
    times = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu":
            values = [float(v) for v in fields]
            idle = values[3] + values[4]
            times[int(name[3:])] = (sum(values) - idle, sum(values), values[7] if len(values) > 7 else 0.0)
    return times


def _busy(before: dict, after: dict, cpus: set[int]) -> float:
    busy = sum(after[c][0] - before[c][0] for c in cpus if c in before)
    total = sum(after[c][1] - before[c][1] for c in cpus if c in before)
    return busy / total if total else math.nan


def _siblings(cpu: int) -> set[int]:
    from gpurepro.host import parse_cpus

    path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
    return parse_cpus(path.read_text()) - {cpu} if path.is_file() else set()


def _clock_mhz(cpu: int) -> float:
    freq = Path(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
    if freq.is_file():
        return float(freq.read_text()) / 1e3
    current = -1
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("processor"):
            current = int(line.split(":")[1])
        elif line.startswith("cpu MHz") and current == cpu:
            return float(line.split(":")[1])
    return math.nan


def _python_loop_ms() -> float:
    """Best of five runs of a fixed pure-Python loop: this thread's CPU speed."""
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        total = 0
        for i in range(300_000):
            total += i & 7
        best = min(best, time.perf_counter() - start)
    return best * 1e3


class _Placement(threading.Thread):
    """Samples which CPU the main thread is on (field 39 of /proc/self/task/<tid>/stat)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.path = Path(f"/proc/self/task/{threading.get_native_id()}/stat")
        self.seen: dict[int, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            fields = self.path.read_text().rsplit(")", 1)[1].split()
            cpu = int(fields[36])
            self.seen[cpu] = self.seen.get(cpu, 0) + 1


def worker(condition: str, gpu: int, min_run_time: float) -> dict[str, Any]:
    import psutil
    import torch

    from gpurepro import host
    from gpurepro.inference.measure import synchronizer, time_blocked
    from gpurepro.inference.models import build_bert, build_vit
    from gpurepro.inference.modes import build_runner

    row: dict[str, Any] = {"condition": condition, "pid": os.getpid(), "pin": ""}
    if condition == "pinned":
        cpus = host.gpu_cpu_set(gpu)
        result = host.pin(cpus, len(cpus)) if cpus else None
        row["pin"] = str(result)
    row["affinity"] = len(os.sched_getaffinity(0))
    row["torch_threads"] = torch.get_num_threads()
    device = torch.device("cuda", gpu)
    torch.cuda.set_device(device)
    row["loop_ms_before"] = _python_loop_ms()
    process = psutil.Process()
    for model, seq in POINTS:
        built = build_bert(model, 1, seq, device) if seq else build_vit(model, 1, device)
        runner = build_runner(built.forward, built.example, "eager", "fp16", warmup=10)
        placement = _Placement()
        placement.start()
        before, switches = _cpu_times(), process.num_ctx_switches()
        with runner.region():
            blocks, _ = time_blocked(runner, synchronizer(device), min_run_time)
        after, switched = _cpu_times(), process.num_ctx_switches()
        placement.stop.set()
        placement.join()
        main_cpu = max(placement.seen, key=placement.seen.get) if placement.seen else -1
        ran_on = set(placement.seen)
        siblings = set().union(*(_siblings(c) for c in ran_on)) - ran_on if ran_on else set()
        row[f"{model}_ms"] = float(blocks["ms"].median())
        row[f"{model}_main_cpu"] = main_cpu
        row[f"{model}_cpus_seen"] = len(ran_on)
        row[f"{model}_cpu_busy"] = _busy(before, after, ran_on)
        row[f"{model}_sibling_busy"] = _busy(before, after, siblings)
        row[f"{model}_host_busy"] = _busy(before, after, set(before))
        row[f"{model}_steal_jiffies"] = sum(after[c][2] - before[c][2] for c in after)
        row[f"{model}_clock_mhz"] = _clock_mhz(main_cpu) if main_cpu >= 0 else math.nan
        row[f"{model}_involuntary_switches"] = switched.involuntary - switches.involuntary
    row["loop_ms_after"] = _python_loop_ms()
    return row


def _append_row(path: Path, row: dict[str, Any]) -> None:
    """One process's row at the end of the CSV (its header first, in a new file)."""
    new = not path.exists()
    with path.open("a", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8, help="fresh processes per condition")
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--min-run-time", type=float, default=2.0, help="seconds of timed blocks a point")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    parser.add_argument("--out", type=Path, help="CSV of every process's row")
    parser.add_argument("--worker", choices=CONDITIONS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.gpu, args.min_run_time)))
        return
    if args.out and args.out.exists():
        parser.error(f"--out {args.out} exists: name a new file (measured rows are never overwritten)")
    conditions = args.conditions.split(",")
    rows = []
    for index in range(args.processes):
        for condition in conditions:
            command = [sys.executable, __file__, "--worker", condition, "--gpu", str(args.gpu)]
            command += ["--min-run-time", str(args.min_run_time)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"process {index} {condition} failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(row)
            if args.out:  # kept as each process ends, so a run stopped early keeps what it measured
                _append_row(args.out, row)
            print(
                f"{index} {condition:8s} "
                + " ".join(
                    f"{m}={row[f'{m}_ms']:.2f}ms cpu{row[f'{m}_main_cpu']}"
                    f"({row[f'{m}_cpus_seen']} seen, busy {row[f'{m}_cpu_busy']:.2f}, "
                    f"sibling {row[f'{m}_sibling_busy']:.2f}, {row[f'{m}_clock_mhz']:.0f} MHz, "
                    f"invol {row[f'{m}_involuntary_switches']})"
                    for m, _ in POINTS
                )
                + f" loop {row['loop_ms_before']:.1f}/{row['loop_ms_after']:.1f} ms"
                + f" threads {row['torch_threads']}",
                flush=True,
            )
    for model, _ in POINTS:
        for condition in conditions:
            values = [r[f"{model}_ms"] for r in rows if r["condition"] == condition]
            if values:
                print(
                    f"{model} {condition}: {len(values)} processes, median "
                    f"{statistics.median(values):.3f} ms, range {min(values):.3f}-{max(values):.3f} ms, "
                    f"geometric SD {geometric_sd(values):.3f}"
                )


if __name__ == "__main__":
    main()
