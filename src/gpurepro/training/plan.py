"""What the workflow decides about training jobs when it plans them (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import GpureproError


def usable_gpu_counts(counts: list[int], available: int | None) -> tuple[list[int], list[int]]:
    """The profile's GPU counts that fit the GPUs here, and those left out. `available` None (the cpu
    profile) keeps every count: there a count is a number of processes."""
    if available is None:
        return sorted(counts), []
    kept = sorted(c for c in counts if c <= available)
    dropped = sorted(c for c in counts if c > available)
    if not kept:
        raise GpureproError(
            f"key train.gpu_counts: {sorted(counts)} all need more GPUs than the {available} selected here"
        )
    return kept, dropped


def ddp_precisions(train: dict[str, Any], precisions: list[str]) -> tuple[str, list[str]]:
    """The profile's training precision and those measured beside it on one GPU (`compare_precisions`,
    e.g. tf32 against AMP); an error naming the key when one is not among the profile's `precisions`."""
    main, compared = train["precision"], list(train.get("compare_precisions", []))
    for key, value in [("train.precision", main), *(("train.compare_precisions", p) for p in compared)]:
        if value not in precisions:
            raise GpureproError(f"key {key}: {value} is not in the profile's precisions {precisions}")
    if main in compared:
        raise GpureproError(
            f"key train.compare_precisions: {compared} repeats train.precision {main}, whose 1-GPU run the "
            "scaling series already has; list only other precisions"
        )
    return main, compared


def channels_last_at(train: dict[str, Any], precision: str) -> bool:
    """The memory format of the profile's run at `precision`: `channels_last` for its own precision, and
    `compare_channels_last` (default the same) for the compared ones, as a published recipe may run
    them (DeepLearningExamples: AMP in NHWC, TF32 and FP32 in NCHW)."""
    if precision == train["precision"]:
        return bool(train["channels_last"])
    return bool(train.get("compare_channels_last", train["channels_last"]))


def train_flags(train: dict[str, Any], precision: str, dataset_flags: str, synthetic: bool) -> str:
    """`gpurepro train` options of the profile's training at `precision`: every run alike but for it
    (and the memory format a compared precision runs in: channels_last_at). Synthetic images are made
    at the profile's size; a real set comes at its own."""
    layout = "channels-last" if channels_last_at(train, precision) else "no-channels-last"
    size = f" --image-size {train['image_size']}" if synthetic else ""
    return (
        f"--batch-size {train['batch_size']} --precision {precision} --{layout} --warmup {train['warmup']} "
        f"{dataset_flags}{size}"
    )


def ddp_runs(counts: list[int], precision: str, compared: list[str]) -> list[tuple[int, str]]:
    """(GPUs, precision) of every ddp run: the scaling series at the profile's precision, and one 1-GPU
    run of each compared precision (a published ratio such as AMP over TF32 is taken on one GPU; its
    speedup over one GPU is then its own, never against another precision's run)."""
    return [(count, precision) for count in counts] + [(1, other) for other in compared]


def workers_per_process(workers: int, processes: int) -> int:
    """DataLoader workers for each of `processes` training processes sharing the node's `workers`."""
    return 0 if workers == 0 else max(1, workers // processes)


def ddp_devices(count: int, gpus: list[int], is_gpu: bool, cluster: bool) -> str:
    """`--gpus` (and `--nproc`) of a `count`-GPU job: the first `count` GPUs selected, or on a cluster
    GPUs 0..count-1 of the job's own allocation; on the cpu profile `count` gloo processes."""
    if not is_gpu:
        return f"--gpus cpu --nproc {count}"
    return "--gpus " + ",".join(map(str, range(count) if cluster else gpus[:count]))


def ddp_gpu_claims(gpus: list[int]) -> dict[str, Callable[[Any], int]]:
    """Resources of a job with an {ngpus} wildcard: gpu_<g> of each of its first `ngpus` GPUs and
    `ngpus` of the `gpu` count, so no other measurement runs on any of them meanwhile."""
    claims: dict[str, Callable[[Any], int]] = {
        f"gpu_{g}": (lambda wildcards, i=i: int(int(wildcards.ngpus) > i)) for i, g in enumerate(gpus)
    }
    claims["gpu"] = lambda wildcards: int(wildcards.ngpus)
    return claims


def noise_flags(
    workload: str, measured: str, gpus: list[int], is_gpu: bool, train_flags: str, workers: int
) -> str:
    """The noise options of `gpurepro sgemm` for the job measuring GPU `measured`: training on every
    other selected GPU (on the cpu profile, one CPU process beside the measurement); '' without noise."""
    if workload == "none":
        return ""
    others = [g for g in gpus if str(g) != str(measured)]
    where = ",".join(map(str, others)) if is_gpu else "cpu"
    per_process = workers_per_process(workers, max(1, len(others)))
    return (
        f"--noise-workload {workload} --noise-gpus {where} "
        f"--noise-args='{train_flags} --workers {per_process}'"
    )
