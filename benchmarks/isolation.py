"""Do busy neighbours on a node's other GPUs move a point's figure? Sentinel points alone and beside them.

With `placement: claim_groups` every selected GPU measures at once, each GPU's jobs pinned to a CPU slice
of their own (gpurepro.host.cpu_slice). Concurrent jobs still share the host's memory bus, caches, PCIe
root, power and air. This script measures, on one GPU pinned to its slice, the sentinel points of each
kind of figure:

- DeiT-B batch 1, eager, fp16 autocast (host-paced inference): ms per inference;
- BERT-B s128 batch 1, eager, fp16 (host-paced inference): ms per inference;
- DeiT-B batch 1 replayed as a CUDA graph, fp16 (GPU-bound inference): ms per inference;
- HFTA serial B=1: one ResNet-18 trained alone, stock steps (host-paced HFTA): samples/s;
- HFTA fused B=32: 32 ResNet-18 fused into one array (GPU-bound HFTA): samples/s;
- SGEMM N=8192, FP32 (torch.mm, TF32 off): TFLOP/s;

each in rounds, alone (the neighbours stopped with SIGSTOP: their contexts stay, their work stops) and
beside the neighbours (SIGCONT), the two conditions of a round back to back in alternating order
(ABBA), so a drift of the host or of the GPU's temperature falls on both alike. The neighbours: on every
other selected GPU, `--neighbour-procs` processes pinned to that GPU's slice, each training a ResNet-18
(batch 128, fp16, stock steps) as a concurrent HFTA point does: busy Python threads, kernel launches and
a busy GPU, the heaviest mix the placement puts beside a point. `--neighbour-load fused
--neighbour-procs 1` puts a GPU-bound point beside it instead (a fused array of 32 ResNet-18: a busy GPU,
one mostly idle thread), which asks whether host-paced points could run beside GPU-bound ones.

For each sentinel it prints the paired ratio beside / alone over rounds (geometric mean of the per-round
ratios, 95% t-interval: process_stats.ratio_interval) and a decision: **may run beside** where that
interval lies within compare's noise floor for time and rate (compare.grade.NOISE_FLOOR, 3%), so a
neighbour moves it by less than `gpurepro compare` could ever call a change; otherwise **keeps the host**,
saying why: the neighbours move it (the interval excludes 1), or its own noise on this host is too wide to
show that they do not.

    python benchmarks/isolation.py --gpu 0 --rounds 6 --out isolation.csv
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from gpurepro import host, nvml
from gpurepro.compare.grade import NOISE_FLOOR
from gpurepro.hfta_study import training
from gpurepro.inference.measure import synchronizer, time_blocked
from gpurepro.inference.models import build_bert, build_vit
from gpurepro.inference.modes import build_runner
from gpurepro.process_stats import ratio_interval
from gpurepro.sgemm.torch_mm import TorchSgemm, flops, timed_call_ms
from gpurepro.stats import Interval

ALONE, BESIDE = "alone", "beside"
MARGIN = NOISE_FLOOR["time"]  # the same for rates: 3%


@dataclass
class Sentinel:
    """A point ready to time: `measure(seconds)` returns its figure over about that long."""

    name: str
    kind: str  # host_share.KINDS
    unit: str
    measure: Callable[[float], float]


def _train_settings(device: str, precision: str = "fp16") -> training.TrainSettings:
    return training.TrainSettings(
        workload="resnet18", batch_size=128, precision=precision, steps=1, warmup=5, optimizer="sgd",
        lr=0.01, seed=0, device=device,
    )  # fmt: skip


def _training_sentinel(name: str, kind: str, unit: training.Unit, device: torch.device) -> Sentinel:
    for i in range(5):
        unit.trainer.step(*unit.batches[i % len(unit.batches)])
    torch.cuda.synchronize(device)

    def measure(seconds: float) -> float:
        torch.cuda.synchronize(device)
        start, steps = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            unit.trainer.step(*unit.batches[steps % len(unit.batches)])
            steps += 1
        torch.cuda.synchronize(device)
        return unit.models * 128 * steps / (time.perf_counter() - start)

    return Sentinel(name, kind, "samples/s", measure)


def _inference_sentinel(name: str, kind: str, built, mode: str) -> Sentinel:  # noqa: ANN001 - BuiltModel
    device = built.example.device
    run = build_runner(built.forward, built.example, mode, "fp16")
    sync = synchronizer(device)
    with run.region():
        for _ in range(10):
            run()
    sync()

    def measure(seconds: float) -> float:
        with run.region():
            blocks, _ = time_blocked(run, sync, seconds)
        return float(blocks["ms"].median())

    return Sentinel(name, kind, "ms", measure)


def _sgemm_sentinel(device: torch.device) -> Sentinel:
    gemm = TorchSgemm(8192, device, seed=0)
    for _ in range(3):
        gemm()
    gemm.synchronize()

    def measure(seconds: float) -> float:
        times, start = [], time.perf_counter()
        while time.perf_counter() - start < seconds:
            times.append(timed_call_ms(gemm, device))
        times.sort()
        return flops(8192) / (times[len(times) // 2] * 1e-3) / 1e12

    return Sentinel("SGEMM N=8192 fp32", "sgemm", "TFLOP/s", measure)


def sentinels(gpu: int) -> list[Sentinel]:
    device = torch.device(f"cuda:{gpu}")
    torch.cuda.set_device(device)
    found = [
        _inference_sentinel(
            "DeiT-B b1 eager", "inference_host_paced", build_vit("deit-b", 1, device), "eager"
        ),
        _inference_sentinel(
            "BERT-B s128 b1 eager", "inference_host_paced", build_bert("bert-b", 1, 128, device), "eager"
        ),
        _inference_sentinel(
            "DeiT-B b1 cudagraph", "inference_gpu_bound", build_vit("deit-b", 1, device), "cudagraph"
        ),
    ]
    settings = _train_settings(f"cuda:{gpu}")
    training.prepare_process(settings)
    found.append(
        _training_sentinel("HFTA serial B=1", "hfta_host_paced", training.single_unit(settings, 0), device)
    )
    found.append(
        _training_sentinel("HFTA fused B=32", "hfta_gpu_bound", training.fused_unit(settings, 32), device)
    )
    found.append(_sgemm_sentinel(device))
    return found


NEIGHBOUR_LOADS = ("train", "fused")


def neighbour(gpu: int, cpus: list[int], ready: mp.Event, load: str) -> None:  # type: ignore[valid-type]
    """One busy neighbour process on GPU `gpu`, forever: `train`, a ResNet-18 trained with stock steps
    (a concurrent HFTA point's worker: a busy Python thread); `fused`, 32 ResNet-18 fused into one array
    (a GPU-bound point: the GPU busy, its one thread mostly waiting on it)."""
    os.sched_setaffinity(0, cpus)
    torch.set_num_threads(1)
    settings = _train_settings(f"cuda:{gpu}")
    training.prepare_process(settings)
    unit = training.single_unit(settings, gpu) if load == "train" else training.fused_unit(settings, 32)
    steps = 0
    while True:
        unit.trainer.step(*unit.batches[steps % len(unit.batches)])
        steps += 1
        if steps == 10:
            torch.cuda.synchronize()
            ready.set()


def slices(gpus: list[int]) -> dict[int, set[int]]:
    """Each GPU's CPU slice as a placed run pins it (host.cpu_slice over the GPUs measuring side by side)."""
    nearest = {g: host.nearest_cpus(g)[0] or host.allowed_cpus() for g in gpus}
    return {g: host.cpu_slice(g, nearest) for g in gpus}


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        os.kill(pid, sig)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, default=0, help="the GPU the sentinels run on")
    parser.add_argument(
        "--neighbours", default="", help="GPUs busy beside it, e.g. 1,2,3 (default: all others)"
    )
    parser.add_argument("--neighbour-procs", type=int, default=8, help="training processes per neighbour GPU")
    parser.add_argument(
        "--neighbour-load",
        choices=NEIGHBOUR_LOADS,
        default="train",
        help="what each neighbour process runs: train (host-heavy, the default) or fused (GPU-bound)",
    )
    parser.add_argument("--rounds", type=int, default=6, help="paired rounds (at least 5)")
    parser.add_argument("--block-s", type=float, default=1.5, help="seconds each figure is timed for")
    parser.add_argument("--settle-s", type=float, default=1.5, help="wait after the neighbours start or stop")
    parser.add_argument("--out", type=Path, help="CSV of every round's figures")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    with nvml.session():
        count = nvml.device_count()
    others = [int(g) for g in args.neighbours.split(",") if g] or [g for g in range(count) if g != args.gpu]
    cut = slices([args.gpu, *others])
    for g, cpus in cut.items():
        print(f"GPU {g}: CPU slice {host.format_cpus(cpus)} ({len(cpus)} CPUs)")
    host.pin(cut[args.gpu], 1)  # as a placed one-thread job pins (host.pin_for_gpu)
    context = mp.get_context("spawn")
    workers, events = [], []
    for g in others:
        for _ in range(args.neighbour_procs):
            ready = context.Event()
            worker = context.Process(
                target=neighbour, args=(g, sorted(cut[g]), ready, args.neighbour_load), daemon=True
            )
            worker.start()
            workers.append(worker)
            events.append(ready)
    points = sentinels(args.gpu)
    for ready in events:
        ready.wait(timeout=300)
    pids = [w.pid for w in workers if w.pid is not None]
    print(f"{len(pids)} neighbour processes on GPUs {others}; {len(points)} sentinels on GPU {args.gpu}")
    rows: list[dict] = []
    try:
        for round_ in range(1, args.rounds + 1):
            order = (ALONE, BESIDE) if round_ % 2 else (BESIDE, ALONE)
            for condition in order:
                _signal_all(pids, signal.SIGSTOP if condition == ALONE else signal.SIGCONT)
                time.sleep(args.settle_s)
                for point in random.sample(points, len(points)):
                    value = point.measure(args.block_s)
                    rows.append(
                        {"round": round_, "condition": condition, "point": point.name, "kind": point.kind,
                         "value": value, "unit": point.unit}
                    )  # fmt: skip
            print(f"round {round_} done", flush=True)
    finally:
        _signal_all(pids, signal.SIGCONT)
        for worker in workers:
            worker.kill()
    report(rows, points)
    if args.out:
        with args.out.open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


def by_round(rows: list[dict], point: str, condition: str) -> dict[int, float]:
    """One sentinel's figure in each round under one condition."""
    return {r["round"]: r["value"] for r in rows if (r["point"], r["condition"]) == (point, condition)}


MAY_RUN_BESIDE = "may run beside"
MOVED = "keeps the host: the neighbours move it"
UNSHOWN = "keeps the host: too noisy here to show it within the floor"


def decide(rows: list[dict], point: str) -> tuple[Interval, str]:
    """beside / alone over the paired rounds, and whether the point may run beside other GPUs' jobs: only
    where the whole interval lies within compare's noise floor (MARGIN). Where it does not, why: the
    interval excludes 1 (the neighbours move the figure), or it holds 1 but reaches past the floor (the
    point's own round-to-round noise is too wide here to show that they do not: more rounds, or a quieter
    host, may)."""
    ratio = ratio_interval(by_round(rows, point, BESIDE), by_round(rows, point, ALONE))
    if ratio.low >= 1 - MARGIN and ratio.high <= 1 + MARGIN:
        return ratio, MAY_RUN_BESIDE
    return ratio, UNSHOWN if ratio.low <= 1 <= ratio.high else MOVED


def report(rows: list[dict], points: list[Sentinel]) -> None:
    """One markdown row per sentinel: medians alone and beside, the paired ratio and the decision."""
    print(
        f"\n| point | kind | alone (median) | beside (median) | beside / alone [95%] | within ±{MARGIN:.0%} |"
    )
    print("|---|---|---|---|---|---|")
    for point in points:
        ratio, verdict = decide(rows, point.name)
        alone, beside = (statistics.median(by_round(rows, point.name, c).values()) for c in (ALONE, BESIDE))
        print(
            f"| {point.name} | {point.kind} | {alone:.4g} {point.unit} | {beside:.4g} {point.unit} | "
            f"{ratio.value:.4f} [{ratio.low:.4f}, {ratio.high:.4f}] | {verdict} |"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
