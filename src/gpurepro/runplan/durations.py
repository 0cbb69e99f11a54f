"""Seconds each planned job takes: this device's earlier benchmark files where they exist, else a model
of its study.

Earlier files: Snakemake's benchmark file of the same job (same relative path) under this results
folder or any sibling results folder of the same device (results/h100, results-run2/h100, ...), the
median of their wall times. A new results folder is how a run is measured again, so that is where the
history of a device lives.

The models follow the phases every measuring job goes through (harness.py): start-up, cool-down, idle
baseline, preparation (model build, warm-up), the timed work and the energy window, from the run's own
settings (idle_seconds, reps, steps, windows). The rates of the work itself (images/s, GEMM TFLOP/s, a
training step's host time) were measured on an H100 80GB HBM3 and are used as they are on other GPUs,
where earlier benchmark files of that GPU say better.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import hfta_study, inference, profiles, registry
from ..telemetry.cooldown import IDLE_TAIL_MARGIN_S, SETTLE_S
from .jobs import PlannedJob

# The end of a benchmark file's name that says which process of its point it timed (`..._run3.tsv`).
PROCESS_SUFFIX = re.compile(r"_run\d+\.tsv$")
# Seconds from a job's command to its measurement's start and from its end to the job's (H100, 16
# cores: median 0.6 s forked from the fork server; 8-11 s as a new interpreter importing torch).
START_FORKED_S, START_OWN_S = 1.0, 9.0
# Seconds from the command to the run's first job, which no job's time holds: Snakemake reading the
# workflow and building the plan, then the checks before the first job (the GPUs against NVML, the raw
# files the plan reads), the estimate itself and the fork server importing torch. A piece of the full
# plan on an H200 host (16 cores, 17 jobs): 4 s to Snakemake's banner, 25 s from it to the first job.
# Building the plan grows with it (on a 2-core machine a dry-run of the full H200 plan's 525 jobs took
# 5.3 s, of the quick plan's 59 jobs 2.7 s), well inside what this rounds to.
RUN_START_S = 29.0
# Mean cool-down wait before a point of each measuring rule (registry.py's cooldown_s): SGEMM and HFTA
# points leave the GPU 5-15 C above its idle temperature, inference barely warms it. How long the next
# point waits depends on the idle temperature the run records at its first measurement (the GPU's
# temperature as the run starts): these means are for H100 quick runs starting at about
# COOLDOWN_REFERENCE_C (188 s in all).
COOLDOWN_S = {record.rule: record.cooldown_s for record in registry.RECORDS if record.cooldown_s}
# Twelve H100 quick runs, recorded idle temperatures 32-39 C, each point's cool-down in its provenance.
# Under the level rule (telemetry/cooldown.py: a cool-down ends at the level the latest plateau ended at,
# so a plateau there ends PLATEAU_S sooner) their waits come to 264, 118, 218, 136, 133, 76, 88, 185,
# 170, 271, 276 and 261 s, from idle temperatures of 32, 38, 34, 36, 37, 37, 39, 39, 36, 35, 33 and 37
# C (the last two, J and K, ran a median-level rule and waited 306 and 331 s). A least-squares line
# through those falls by 12% of its value at 36 C per degree warmer. A cold GPU records a low idle
# temperature and waits long to return to it after each hot point; a warm one mostly waits less. Cards
# and rooms differ besides: about the line the runs scatter by 56 s (one standard deviation, 30% of the
# waits at 36 C), as K shows (37 C, then plateaus rising from 42 to 48 C as the room warmed). The scale
# is held to COOLDOWN_SCALE_RANGE. Its floor: two runs on a card that idled at 50 C (L, M) waited 125 and
# 257 s, 0.66x and 1.37x the mean at 36 C, not the line's nothing: a warm card's hot points still cool
# to a plateau, and the line's fall stops at the smaller of the two. Its ceiling: no colder run was seen.
COOLDOWN_REFERENCE_C, COOLDOWN_SCALE_PER_C = 36.0, 0.12
COOLDOWN_SCALE_RANGE = (0.66, 2.0)
# The measuring rules of each study (registry.py): as the estimate names them, and whose cool-down setting
# a rule takes (profiles.cooldown_max_wait_s).
STUDIES = {record.rule: record.study for record in registry.RECORDS}
# Preparation of an inference point (model built with random weights, moved, warmed up; H100: 1.5-3 s
# with the libraries preloaded), and torch.compile's compilation on top for compiled points (a minute).
INFERENCE_PREPARE_S, COMPILE_S = 2.5, 60.0
# torch.utils.benchmark's blocked_autorange runs a little past min_run_time.
AUTORANGE_OVERRUN = 1.2
# GEMM operands allocated and filled on the GPU, plus the cuBLAS handle.
GEMM_SETUP_S = 2.0
# HFTA, ResNet-18-sized models at batch 128 (H100, AMP): one model's training rate in samples/s with
# stock and graphed steps, the rate B models reach sharing the GPU as processes (concurrent) and under
# MPS, the fused array's rate and its host floor per step; set-up of a serial model, of B processes
# (fixed + per process; MPS adds its daemon), of the fused array (fixed + per model: its convolution
# forms are timed per shape), and a graph's capture.
HFTA_MODEL_RATE = {"stock": 10_500.0, "graphed": 66_000.0}
HFTA_SHARED_RATE = {"concurrent": 40_000.0, "mps": 73_000.0}
HFTA_FUSED_RATE, HFTA_FUSED_HOST_STEP_S = 120_000.0, 0.025
HFTA_MODEL_SETUP_S, HFTA_GRAPH_CAPTURE_S = 0.5, 1.0
# torch.compile of one training step (per process): a fused B=8 ResNet-18 point on an H100 took 56.0 s
# with --compile on against 27.1 s with it off, in fresh processes one after the other.
HFTA_COMPILE_S = 30.0
HFTA_PROCESSES_SETUP_S, HFTA_PROCESS_SETUP_S, MPS_DAEMON_S = 4.0, 0.2, 5.0
HFTA_FUSED_SETUP_S, HFTA_FUSED_SETUP_PER_MODEL_S = 9.5, 0.34
# A window read from the energy counter opens and closes at the counter's updates (telemetry/energy.py),
# every 100 ms on an H100: half an update's wait at each edge on average, and the window itself as long
# as the updates it spans (3.09-3.11 s for 3 s in a quick run's DeiT points).
COUNTER_EDGES_S = 0.15
# The first fused HFTA process on a machine builds the Triton kernels its convolution forms are timed
# with, which Triton caches for the processes after it: 57 and 59 s against 24-28 s for the next ones in
# two fresh quick runs on H100s (docs/runtime.md). Where this device has no earlier fused point to go by,
# the first fused job of the plan takes it on top of its model (a machine whose cache is warm gives it
# back).
HFTA_FIRST_BUILD_S = 33.0
# ResNet-50 training images/s per GPU, and the seconds a precision spends before its steps run at that
# rate (cuDNN's autotuning of every convolution), and torchrun's start-up. No cool-down or idle baseline.
# AMP: 30 + 10 steps of 256 images took 2.4 s on an H100; 100 + 20 steps 20.7 s in all on an H200, as
# modelled. TF32: 40 steps took 18 s on an H100, 120 steps 22.9 s on an H200 (36.4 s, less torchrun and
# start): steps at about 4,200 images/s after some 15.5 s of autotuning, which a single rate (570
# images/s, fitted to the 40 steps) put at 67 s for the 120. FP32 with TF32 off was not measured again:
# it keeps the single rate.
TRAIN_RATE = {"fp16": 4_300.0, "bf16": 4_300.0, "tf32": 4_180.0, "fp32": 570.0}
TRAIN_AUTOTUNE_S = {"tf32": 15.5}
TORCHRUN_S = 12.5
# Jobs that are not measurements: seconds of work after start-up.
FIXED_S = {
    "build_kernels": 30.0,
    "reference_run": 1.1,
    "build_image": 900.0,
    "download_tiny_imagenet": 120.0,
    "tiny_imagenet": 60.0,
    "imagenet": 3_600.0,
    "profile_nsys_run": 60.0,
}


@dataclass(frozen=True)
class RunSettings:
    """What the models read: the run's config and its (quick-adjusted) device profile."""

    config: Mapping[str, Any]
    profile: Mapping[str, Any]
    fork_server: bool = False
    # a GPU profile (the cpu profile has no temperature to cool down from)
    gpu: bool = True
    # GEMM rate of this GPU in TFLOP/s (FP32), for the SGEMM jobs
    fp32_tflops: float = 51.0
    # the coolest selected GPU's temperature as the run is planned (None: unknown, as when planning on
    # a machine without the GPU): the idle temperature its cool-downs will wait for
    start_temperature_c: float | None = None
    # this GPU model's cool-down waits against an H100's, whose runs COOLDOWN_S was fitted to (the device
    # profile's cooldown_scale)
    cooldown_scale: float = 1.0

    @property
    def start_s(self) -> float:
        return START_FORKED_S if self.fork_server else START_OWN_S

    def telemetry(self, key: str) -> float:
        return float(self.config["telemetry"][key])

    def idle_s(self, rule: str) -> float:
        """The idle baseline before a point of `rule`: its study's profile section's, else the config's."""
        measured = registry.record(rule)
        section: Mapping[str, Any] = {}
        if measured is not None and measured.idle_from_section and measured.section is not None:
            section = self.profile.get(measured.section, {})
        return profiles.idle_seconds(section, self.config)

    def cooldown_cap_s(self, rule: str) -> float:
        """The longest cool-down this run lets a point of `rule` wait (none in a quick run's studies that
        take no cool-down: profiles.cooldown_max_wait_s)."""
        return profiles.cooldown_max_wait_s(self.config, STUDIES.get(rule))

    def cooldown_s(self, rule: str) -> float:
        """The expected cool-down wait before a point of `rule`, for this run's starting temperature."""
        if not self.gpu:
            return 0.0
        mean = COOLDOWN_S.get(rule, 0.0) * self.cooldown_scale
        if self.start_temperature_c is not None:
            low, high = COOLDOWN_SCALE_RANGE
            scale = 1.0 - COOLDOWN_SCALE_PER_C * (self.start_temperature_c - COOLDOWN_REFERENCE_C)
            mean *= min(high, max(low, scale))
        return min(mean, self.cooldown_cap_s(rule))


def _rest(settings: RunSettings, rule: str, cooldown: float) -> float:
    """Seconds a point of `rule` spends before its own work after a cool-down of `cooldown` s: the settle,
    the wait and the idle baseline, which a wait long enough holds as its tail (harness.py)."""
    # the GPU left alone after the previous point, what of it its own start-up has not already taken; the
    # cool-down's wait counts towards it
    settling = max(0.0, SETTLE_S - settings.start_s) if settings.gpu else 0.0
    idle = settings.idle_s(rule)
    # the cool-down's tail is the idle baseline where it is long enough and lies after the settle
    tail = cooldown >= idle + max(IDLE_TAIL_MARGIN_S, settling)
    return max(settling, cooldown) + (0.0 if tail else idle)


def _measuring(settings: RunSettings, body_s: float, rule: str, counter_windows: int = 1) -> float:
    """A GPU point: start-up, cool-down and idle baseline around its own work, and the wait of each of
    its `counter_windows` windows read from the energy counter for the counter's updates at its edges."""
    edges = COUNTER_EDGES_S * counter_windows
    return settings.start_s + _rest(settings, rule, settings.cooldown_s(rule)) + body_s + edges


def _gemm(settings: RunSettings, n: int, reps: int, warmup: int, rule: str) -> float:
    product_s = 2 * n**3 / (settings.fp32_tflops * 1e12)
    work = (reps + warmup) * product_s
    body = GEMM_SETUP_S + max(work, settings.telemetry("min_energy_window_s"))
    return _measuring(settings, body, rule)


def sgemm_run(job: PlannedJob, settings: RunSettings) -> float:
    sgemm = settings.profile["sgemm"]
    n, reps, warmup = int(job.wildcards["n"]), int(sgemm["reps"]), int(sgemm.get("warmup", 5))
    return _gemm(settings, n, reps, warmup, job.rule)


def variability_run(job: PlannedJob, settings: RunSettings) -> float:
    variability = settings.profile["variability"]
    return _gemm(settings, int(variability["n"]), int(variability["reps"]), 5, job.rule)


def variability_node(job: PlannedJob, settings: RunSettings) -> float:
    """One run on every selected GPU at once (campaign/node.py): one GPU's run, as the GPUs run side by
    side, after its per-GPU processes, spawned interpreters, have imported torch before their barrier."""
    return variability_run(job, settings) + START_OWN_S


def inference_point(job: PlannedJob, settings: RunSettings) -> float:
    run = inference.timing(settings.profile["inference"], settings.config)
    prepare = INFERENCE_PREPARE_S + (COMPILE_S if job.wildcards.get("mode") == "compile" else 0.0)
    timed = AUTORANGE_OVERRUN * run["min_run_time_s"]
    body = prepare + settings.telemetry("active_idle_seconds") + timed + run["energy_window_s"]
    return _measuring(settings, body, job.rule, counter_windows=3)  # idle, active idle, energy


def hfta_point(job: PlannedJob, settings: RunSettings) -> float:
    hfta = settings.profile["hfta"]
    b, mode, step = int(job.wildcards["b"]), job.wildcards["scheme"], job.wildcards["step"]
    steps = int(hfta["steps"]) + int(hfta["warmup"])
    samples = steps * int(hfta["batch_size"])
    capture = HFTA_GRAPH_CAPTURE_S if step == "graphed" else 0.0
    min_timed = hfta_study.min_timed_s(hfta, settings.config)
    capture += HFTA_COMPILE_S if step == "compiled" else 0.0
    if mode == "serial":  # B models one after another
        one = max(samples / HFTA_MODEL_RATE.get(step, HFTA_MODEL_RATE["stock"]), min_timed)
        body = b * (HFTA_MODEL_SETUP_S + capture + one)
    elif mode in HFTA_SHARED_RATE:  # B processes at once
        rate = min(b * HFTA_MODEL_RATE["stock"], HFTA_SHARED_RATE[mode])
        setup = HFTA_PROCESSES_SETUP_S + HFTA_PROCESS_SETUP_S * b + (MPS_DAEMON_S if mode == "mps" else 0.0)
        body = setup + capture + max(b * samples / rate, min_timed)
    else:  # the fused array
        step_s = max(HFTA_FUSED_HOST_STEP_S, b * int(hfta["batch_size"]) / HFTA_FUSED_RATE)
        setup = HFTA_FUSED_SETUP_S + HFTA_FUSED_SETUP_PER_MODEL_S * b
        body = setup + capture + max(steps * step_s, min_timed)
    return _measuring(settings, body, job.rule)


def train_ddp(job: PlannedJob, settings: RunSettings) -> float:
    train = settings.profile["train"]
    precision = job.wildcards.get("precision", train.get("precision", "fp16"))
    images = (int(train["iterations"]) + int(train["warmup"])) * int(train["batch_size"])
    rate = TRAIN_RATE.get(precision, TRAIN_RATE["fp32"])
    return settings.start_s + TORCHRUN_S + TRAIN_AUTOTUNE_S.get(precision, 0.0) + images / rate


def loader_bench(job: PlannedJob, settings: RunSettings) -> float:
    return settings.start_s + float(settings.config["data"]["loader"]["bench_seconds"]) + 10.0


MODELS: dict[str, Callable[[PlannedJob, RunSettings], float]] = {
    "sgemm_run": sgemm_run,
    "variability_run": variability_run,
    "variability_node": variability_node,
    "infer_deit": inference_point,
    "infer_bert": inference_point,
    "hfta_point": hfta_point,
    "train_ddp": train_ddp,
    "loader_bench": loader_bench,
}


def first_builds(jobs: Sequence[PlannedJob], earlier: Sequence[float | None]) -> list[float]:
    """Seconds a job adds where nothing of its kind ran on this device before: the first fused HFTA job
    builds its Triton kernels (HFTA_FIRST_BUILD_S), unless an earlier run of a fused point is there to
    go by (its time holds that build already, or the cache made it unneeded)."""
    fused = [
        i for i, job in enumerate(jobs) if job.rule == "hfta_point" and job.wildcards.get("scheme") == "hfta"
    ]
    added = [0.0] * len(jobs)
    if fused and all(earlier[i] is None for i in fused):
        added[fused[0]] = HFTA_FIRST_BUILD_S
    return added


def modelled(job: PlannedJob, settings: RunSettings) -> float:
    """The job's seconds by its study's model; a job that is not a measurement (aggregation, plots, the
    verdict) is start-up and a second of work, unless FIXED_S names it."""
    if job.rule in MODELS:
        return MODELS[job.rule](job, settings)
    return settings.start_s + FIXED_S.get(job.rule, 1.0)


def _wall_time(path: Path) -> float:
    """The median wall time (column `s`) of a Snakemake benchmark file; NaN if unreadable."""
    try:
        lines = path.read_text().splitlines()
        column = lines[0].split("\t").index("s")
        return statistics.median(float(line.split("\t")[column]) for line in lines[1:] if line.strip())
    except (OSError, ValueError, IndexError, statistics.StatisticsError):
        return math.nan


def _cooldown_waited(benchmark: Path) -> float:
    """The cool-down the measurement behind a benchmark file waited (its raw file's sidecar:
    <device>/benchmarks/<study>/<point>.tsv -> <device>/<study>/raw/<point>.provenance.json); 0 if none."""
    parts = benchmark.parts
    if "benchmarks" not in parts:
        return 0.0
    at = parts.index("benchmarks")
    if at + 2 >= len(parts):
        return 0.0
    study, point = parts[at + 1], Path(*parts[at + 2 :]).with_suffix(".provenance.json")
    sidecar = Path(*parts[:at]) / study / "raw" / point
    try:
        # the settle before it (cooldown.settled_s) stays in the job's time: it does not depend on heat
        return float(json.loads(sidecar.read_text())["measurement"]["cooldown"].get("waited_s", 0.0))
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _same_point(relative: Path) -> tuple[str, re.Pattern[str] | None]:
    """The glob of a benchmark file's point in every process (`<point>_run<k>.tsv` -> `<point>_run*.tsv`)
    and the pattern its names must match; the file itself where its name carries no process."""
    match = PROCESS_SUFFIX.search(relative.name)
    if not match:
        return str(relative), None
    stem = relative.name[: match.start()]
    return str(relative.with_name(f"{stem}_run*.tsv")), re.compile(re.escape(stem) + PROCESS_SUFFIX.pattern)


def _earlier_runs(job: PlannedJob, results_dir: Path) -> list[tuple[float, float]]:
    """(wall time, cool-down waited) of this job's point in earlier runs of this device (see the module's
    docstring): its benchmark files in this results folder or a sibling one, in every process that
    measured the point. The processes of a point are one job run again: pooling them keeps one slow
    process (a fresh machine's first: 57-67 s against 23-27 s for the first fused HFTA process on an H100,
    which builds the Triton convolutions) from standing for the point in the next run."""
    if not job.benchmark:
        return []
    benchmark = Path(job.benchmark)
    try:
        relative = benchmark.relative_to(results_dir)
    except ValueError:
        return []
    parent = results_dir.parent if results_dir.parent != Path("") else Path(".")
    pattern, names = _same_point(relative)
    runs = [
        (_wall_time(path), _cooldown_waited(path))
        for path in sorted(parent.glob(f"*/{pattern}"))
        if path.is_file() and (names is None or names.fullmatch(path.name))
    ]
    return [(wall, waited) for wall, waited in runs if not math.isnan(wall)]


def _blended_wait(waited: float, expected: float, cap: float = math.inf) -> float:
    """The cool-down expected before a job an earlier run of this device measured: half what that run
    waited, half what the model expects for this run's starting temperature. Each alone misses: a run
    straight after another starts warm, so the model expects short waits, yet where the room keeps
    warming its card waits as long as in the first run (H100 pairs J, K: 306 then 331 s, the model 106 s
    for K; L, M: 125 then 257 s, the model 47 s for M); and a first run that started cold waits far longer
    than the warm run after it (C, D: 317 then 155 s). Dry-runs from the first run's files, against the
    second's time: K -11% (the model's waits alone -26%), M -16% (-22%), F +5% (-6%), D +15% (C's files,
    older code; C's waits alone +27%). Never past the wait this run allows (`cap`): an earlier run that
    waited before a point says nothing of a run that takes no cool-down there."""
    return min((waited + expected) / 2, cap)


def earlier(job: PlannedJob, results_dir: Path, settings: RunSettings) -> float | None:
    """The median wall time of this job in earlier runs of this device, each with the cool-down it waited
    replaced by the one expected for it (_blended_wait)."""
    expected, cap = settings.cooldown_s(job.rule), settings.cooldown_cap_s(job.rule)
    # a wait replaced, with what it held: a wait as long as the idle baseline held the baseline as its tail,
    # so a shorter one (none, in a quick run's studies without cool-downs) gives back less than it was
    times = [
        wall
        - _rest(settings, job.rule, waited)
        + _rest(settings, job.rule, _blended_wait(waited, expected, cap))
        for wall, waited in _earlier_runs(job, results_dir)
    ]
    return statistics.median(times) if times else None


def expected_cooldown(job: PlannedJob, results_dir: Path, settings: RunSettings) -> float:
    """The cool-down wait the estimate counts before this job: as `earlier` counts it where earlier runs
    of this device measured the job, else the model's (RunSettings.cooldown_s)."""
    expected, cap = settings.cooldown_s(job.rule), settings.cooldown_cap_s(job.rule)
    waits = [_blended_wait(waited, expected, cap) for _, waited in _earlier_runs(job, results_dir)]
    return statistics.median(waits) if waits else expected
