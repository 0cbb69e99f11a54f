"""The run's time estimate: jobs on one GPU run one after another and on different GPUs side by side,
earlier benchmark files of the same job on this device replace the model, and a plan estimates only
the jobs it holds (a dry-run of one figure does not estimate the whole pipeline)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from gpurepro import profiles
from gpurepro.runplan import durations, estimate, schedule
from gpurepro.runplan.jobs import PlannedJob
from gpurepro.telemetry.cooldown import SETTLE_S

from .conftest import ROOT, import_installable


def _settings(quick: bool = True, fork_server: bool = True) -> durations.RunSettings:
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    profile = profiles.with_quick_settings(profiles.read_profile("h100", ROOT / "config" / "devices"), quick)
    return durations.RunSettings(config, profile, fork_server=fork_server)


def test_measurements_on_one_gpu_queue_and_on_two_gpus_overlap() -> None:
    on = [PlannedJob("m", resources={"gpu_0": 1}), PlannedJob("m", resources={"gpu_0": 1})]
    assert schedule.simulate(on, [10, 20], cores=8, capacity={"gpu_0": 1}).wall_s == 30
    apart = [PlannedJob("m", resources={"gpu_0": 1}), PlannedJob("m", resources={"gpu_1": 1})]
    timed = schedule.simulate(apart, [10, 20], cores=8, capacity={"gpu_0": 1, "gpu_1": 1})
    assert timed.wall_s == 20 and timed.busy_s == {"gpu_0": 10, "gpu_1": 20}


def test_a_job_waits_for_its_inputs_and_for_cores() -> None:
    jobs = [PlannedJob("a", threads=2), PlannedJob("b", threads=2), PlannedJob("c", after=(0, 1))]
    assert schedule.simulate(jobs, [5, 7, 1], cores=2, capacity={}).wall_s == 13  # a, then b, then c
    assert schedule.simulate(jobs, [5, 7, 1], cores=4, capacity={}).wall_s == 8  # a and b together
    # more threads than cores: scaled down to all of them, as Snakemake does
    assert schedule.simulate([PlannedJob("x", threads=64)], [3], cores=2, capacity={}).wall_s == 3


def test_the_fork_server_and_the_run_settings_enter_the_model() -> None:
    point = PlannedJob("infer_deit", {"vit_model": "deit-b", "mode": "eager"})
    forked, own = (
        durations.modelled(point, _settings()),
        durations.modelled(point, _settings(fork_server=False)),
    )
    # a forked point still leaves the GPU alone for SETTLE_S after the previous one, its cool-down
    # counting towards them; a new interpreter's start-up takes longer than that by itself
    cool = durations.COOLDOWN_S["infer_deit"]
    left_alone = max(SETTLE_S - durations.START_FORKED_S, cool)
    assert own - forked == pytest.approx(durations.START_OWN_S + cool - durations.START_FORKED_S - left_alone)
    compiled = PlannedJob("infer_deit", {"vit_model": "deit-b", "mode": "compile"})
    assert durations.modelled(compiled, _settings()) - forked == pytest.approx(durations.COMPILE_S)
    big = durations.modelled(PlannedJob("sgemm_run", {"n": "25536", "backend": "cublas"}), _settings())
    small = durations.modelled(PlannedJob("sgemm_run", {"n": "8192", "backend": "cublas"}), _settings())
    assert big > small
    serial = [
        durations.modelled(
            PlannedJob("hfta_point", {"b": b, "scheme": "serial", "step": "stock"}), _settings()
        )
        for b in ("8", "32")
    ]
    assert serial[1] > 3 * serial[0] - 3 * 20  # B models one after another


def test_a_gpu_starting_warm_is_expected_to_wait_less_for_its_cool_downs() -> None:
    mean = durations.COOLDOWN_S["sgemm_run"]
    at = {
        t: replace(_settings(), start_temperature_c=t).cooldown_s("sgemm_run") for t in (20, 33, 36, 39, 60)
    }
    assert at[36] == pytest.approx(mean) and _settings().cooldown_s("sgemm_run") == mean  # unknown: the mean
    assert at[33] > at[36] > at[39]
    low, high = durations.COOLDOWN_SCALE_RANGE
    assert at[20] == pytest.approx(high * mean) and at[60] == pytest.approx(low * mean)
    assert replace(_settings(), gpu=False, start_temperature_c=30).cooldown_s("sgemm_run") == 0
    point = PlannedJob("sgemm_run", {"n": "25536", "backend": "cublas"})
    # both waits long enough to hold the idle baseline in their tails: the difference is the waits'
    warm, cold = (durations.modelled(point, replace(_settings(), start_temperature_c=t)) for t in (35, 31))
    waits = {t: replace(_settings(), start_temperature_c=t).cooldown_s("sgemm_run") for t in (35, 31)}
    assert waits[35] >= SETTLE_S + _settings().telemetry("idle_seconds")  # its tail holds the baseline
    assert cold - warm == pytest.approx(waits[31] - waits[35])


def _benchmark(path: Path, seconds: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:00\t1.0\n")


def test_earlier_benchmark_files_of_this_device_replace_the_model(tmp_path: Path) -> None:
    relative = Path("h100/benchmarks/inference/deit/deit-b_b1_fp16_eager.tsv")
    _benchmark(tmp_path / "results" / relative, 40)
    _benchmark(tmp_path / "results-run2" / relative, 50)
    _benchmark(tmp_path / "results-run3" / relative, 90)
    _benchmark(tmp_path / "results" / "a100" / relative.relative_to("h100"), 1000)  # another GPU's
    # run 3 waited 41 s for its GPU to cool: half of it stays, half the model's wait joins it (its 4 s
    # settle stays); runs 1 and 2 kept no sidecar (no wait recorded)
    sidecar = tmp_path / "results-run3" / "h100/inference/raw/deit/deit-b_b1_fp16_eager.provenance.json"
    sidecar.parent.mkdir(parents=True)
    sidecar.write_text(json.dumps({"measurement": {"cooldown": {"waited_s": 41.0, "settled_s": 4.0}}}))
    job = PlannedJob("infer_deit", {"mode": "eager"}, benchmark=str(tmp_path / "results-new" / relative))
    cool = durations.COOLDOWN_S["infer_deit"]
    # the median of this device's runs: 40, 50 and 90 - 41 + (41 + cool) / 2; runs 1 and 2 with half the
    # model's wait, which their settle already holds (the wait counts towards it)
    assert cool / 2 <= durations.SETTLE_S - durations.START_FORKED_S
    assert durations.earlier(job, tmp_path / "results-new", _settings()) == pytest.approx(50)
    # run 3 alone: its wall time, with its 41 s wait halfway to the model's
    alone = tmp_path / "alone"
    (alone / "results-run3").mkdir(parents=True)
    (alone / "results-run3" / "h100").symlink_to(tmp_path / "results-run3" / "h100")
    only_run3 = PlannedJob("infer_deit", {"mode": "eager"}, benchmark=str(alone / "results-new" / relative))
    assert durations.earlier(only_run3, alone / "results-new", _settings()) == pytest.approx(
        90 - 41 + (41 + cool) / 2
    )
    assert durations.expected_cooldown(only_run3, alone / "results-new", _settings()) == (41 + cool) / 2
    unseen = PlannedJob(
        "infer_deit", {"mode": "eager"}, benchmark=str(tmp_path / "results-new" / "h100/x.tsv")
    )
    assert durations.earlier(unseen, tmp_path / "results-new", _settings()) is None
    found = estimate.estimate([job, unseen], _settings(), tmp_path / "results-new", 16, {})
    assert found.from_earlier == 1 and found.wall_s == pytest.approx(50)
    # what the command takes: the run's start before its first job, then the jobs
    assert found.total_s == pytest.approx(50 + durations.RUN_START_S)
    assert f"about {estimate.duration(found.total_s)} with 16 cores" in estimate.describe(found, 16)
    assert estimate.estimate([], _settings(), tmp_path / "results-new", 16, {}).total_s == 0
    assert found.model_wall_s < 49
    text = estimate.describe(found, 16)
    assert "1 of 2 jobs from this device's earlier benchmark files" in text and "inference 2 jobs" in text
    # the line says how much of the estimate is cool-down, the part that differs most between cards
    assert found.cooldown_s == pytest.approx(cool / 2 + cool)  # the seen job's median wait, the model's
    assert f"about {estimate.duration(1.5 * cool)} of cool-down waits" in text


def test_the_processes_of_one_point_are_one_job_to_the_estimate(tmp_path: Path) -> None:
    """A fresh machine's first fused HFTA process loaded the CUDA libraries from disk (67 s against 23
    and 27 s on an H100): the next run's estimate of any process of that point is the median over all
    three, not the first one's time; another point (B=8) and a name without a process stay apart."""
    folder = tmp_path / "results" / "h100/benchmarks/hfta/resnet18/stock"
    for run, seconds in ((1, 67), (2, 23), (3, 27)):
        _benchmark(folder / f"hfta_fp16_b32_run{run}.tsv", seconds)
    _benchmark(folder / "hfta_fp16_b8_run1.tsv", 500)
    _benchmark(folder / "hfta_fp16_b32_run1x.tsv", 500)
    settings = replace(_settings(), gpu=False)  # no cool-down to blend in
    new = tmp_path / "results-run2"
    for run in (1, 2, 4):
        relative = f"h100/benchmarks/hfta/resnet18/stock/hfta_fp16_b32_run{run}.tsv"
        job = PlannedJob("hfta_point", {"b": "32"}, benchmark=str(new / relative))
        assert durations.earlier(job, new, settings) == pytest.approx(27)
    sgemm = tmp_path / "results" / "h100/benchmarks/sgemm/cublas_n8192.tsv"
    _benchmark(sgemm, 12)
    job = PlannedJob("sgemm_run", {}, benchmark=str(new / "h100/benchmarks/sgemm/cublas_n8192.tsv"))
    assert durations.earlier(job, new, settings) == pytest.approx(12)


def test_a_first_fused_point_on_this_device_adds_its_triton_build_once(tmp_path: Path) -> None:
    """A fresh machine's first fused HFTA process builds the Triton kernels (57-59 s against 24-28 s):
    with no earlier fused point on this device the estimate adds the build to one fused job, not to every
    process; an earlier run's fused point (its time already holds the build) adds none."""
    settings = replace(_settings(), gpu=False)  # no cool-down to blend in
    relative = "h100/benchmarks/hfta/resnet18/stock/hfta_fp16_b32_run{run}.tsv"
    new = tmp_path / "results-run2"
    jobs = [
        PlannedJob("hfta_point", {"b": "32", "scheme": scheme, "step": "stock"}, resources={"gpu_0": 1},
                   benchmark=str(new / relative.replace("hfta_fp16", f"{scheme}_fp16").format(run=run)))
        for scheme in ("serial", "hfta") for run in (1, 2, 3)
    ]  # fmt: skip
    fresh = estimate.estimate(jobs, settings, new, cores=16, capacity={"gpu_0": 1})
    models = sum(durations.modelled(job, settings) for job in jobs)  # one GPU: one after another
    assert fresh.wall_s == pytest.approx(models + durations.HFTA_FIRST_BUILD_S)
    assert durations.first_builds(jobs, [None] * 6) == [0, 0, 0, durations.HFTA_FIRST_BUILD_S, 0, 0]
    # a process more, where a claim stays inconclusive, builds nothing: its worst case leaves the build out
    extra = estimate.ExtraProcesses(("hfta",), extra=1, rounds=3).worst_case(fresh)
    assert extra == (1, pytest.approx(models / 6))
    _benchmark(tmp_path / "results" / relative.format(run=1), 25)
    assert durations.first_builds(jobs, [None, None, None, 25.0, None, None]) == [0.0] * 6
    warm = estimate.estimate(jobs, settings, new, cores=16, capacity={"gpu_0": 1})
    assert warm.from_earlier == 3 and warm.wall_s < fresh.wall_s - durations.HFTA_FIRST_BUILD_S


def test_a_quick_run_without_cool_downs_counts_none_from_an_earlier_runs_waits(tmp_path: Path) -> None:
    """An earlier run waited 41 s before an inference point; a quick run, which takes no cool-down there
    (config telemetry.quick.cooldown_studies), counts the point's time without it and no wait at all."""
    relative = Path("h100/benchmarks/inference/deit/deit-b_b1_fp16_eager_run1.tsv")
    _benchmark(tmp_path / "results" / relative, 60)
    sidecar = tmp_path / "results" / "h100/inference/raw/deit/deit-b_b1_fp16_eager_run1.provenance.json"
    sidecar.parent.mkdir(parents=True)
    sidecar.write_text(json.dumps({"measurement": {"cooldown": {"waited_s": 41.0}}}))
    settings = _settings()
    quick = replace(settings, config={**settings.config, "quick": True})
    job = PlannedJob("infer_deit", {}, benchmark=str(tmp_path / "results-run2" / relative))
    # its 41 s wait held the idle baseline as its tail: without the wait, the settle and the baseline
    settle_and_idle = durations.SETTLE_S - durations.START_FORKED_S + quick.idle_s("infer_deit")
    new = tmp_path / "results-run2"
    assert durations.earlier(job, new, quick) == pytest.approx(60 - 41 + settle_and_idle)
    assert durations.expected_cooldown(job, tmp_path / "results-run2", quick) == 0
    assert quick.cooldown_s("infer_deit") == 0 and quick.cooldown_s("variability_run") > 0
    full_wait = (41 + settings.cooldown_s("infer_deit")) / 2  # long enough to hold the baseline again
    assert durations.earlier(job, tmp_path / "results-run2", settings) == pytest.approx(60 - 41 + full_wait)


def _dry_run(workflow: Path, *argv: str) -> str:
    """A dry-run in a copy of the workflow: in the checkout, a user's earlier benchmark files would
    replace the models this estimate is checked against."""
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", *argv],
        cwd=workflow,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def test_a_dry_run_estimates_only_the_jobs_it_planned(workflow_copy: Path) -> None:
    one_figure = _dry_run(
        workflow_copy, "plot_bert", "--cores", "16", "--config", "device=h100", "quick=true"
    )
    # three BERT points, each in three processes (the h100 profile's quick repeats), their first round of
    # more processes (its tables and checkpoint), the table and the figure; no DeiT or HFTA point
    assert "gpurepro: 13 jobs planned, about" in one_figure
    assert (
        "measurements: inference 9 jobs" in one_figure and "hfta" not in one_figure.split("jobs planned")[1]
    )
    # the worst case of the rounds of more processes: BERT's cap alone (quick: 1 a family of points)
    assert "at worst 1 more process where claims stay inconclusive" in one_figure
    # a piece that stops at raw files plans no checkpoint of more processes: it has no extra round to
    # add, and says none (its first line counts the run's own start on top of its measurements)
    piece = _dry_run(
        workflow_copy,
        "results/h100/inference/raw/bert/bert-b_s128_b1_fp16_eager_run1.csv",
        "--cores", "16", "--config", "device=h100", "quick=true",
    )  # fmt: skip
    assert "gpurepro: 1 job planned, about" in piece and "measurements: inference 1 job" in piece
    assert "inconclusive" not in piece


def test_the_full_h100_plan_fits_a_gpu_day(workflow_copy: Path) -> None:
    """Every point in its processes (five for host-paced points) still fits a working day on one GPU."""
    full = _dry_run(workflow_copy, "--cores", "16", "--config", "device=h100")
    line = next(line for line in full.splitlines() if "jobs planned, about" in line)
    hours = line.split("about ")[1].split(" with")[0]
    assert " h " in hours and int(hours.split(" h ")[0]) < 11, line


def test_quick_inference_points_take_the_profiles_shorter_windows(workflow_copy: Path) -> None:
    """A quick run's inference points time 1.5 s of blocks and read energy over 3 s in each process (the
    h100 profile's quick block), the full run's the config's 5 and 10 s: the commands and the estimate
    both say so."""
    quick = _dry_run(
        workflow_copy, "plot_bert", "-p", "--cores", "16", "--config", "device=h100", "quick=true"
    )
    full = _dry_run(workflow_copy, "plot_bert", "-p", "--cores", "16", "--config", "device=h100")
    for text, run_time, window in ((quick, "1.5", "3"), (full, "5.0", "10.0")):
        commands = [line for line in text.splitlines() if "gpurepro infer bert" in line]
        assert commands and all(f"--min-run-time {run_time} " in line for line in commands), commands[:1]
        assert all(f"--energy-window-s {window} " in line for line in commands), commands[:1]
    point = PlannedJob("infer_bert", {"bert_model": "bert-b", "seq": "128", "mode": "eager"})
    saved = durations.modelled(point, _settings(quick=False)) - durations.modelled(point, _settings())
    # shorter blocks (5 -> 1.5 s), energy window (10 -> 3 s) and idle baseline (the config's 5 -> 3 s)
    assert saved == pytest.approx(durations.AUTORANGE_OVERRUN * 3.5 + 7 + 2)


def test_a_profiles_cooldown_scale_scales_the_expected_waits() -> None:
    """The waits were fitted to H100 runs; a GPU model that cools faster says so in its profile (the
    h200 profile's cooldown_scale), and its expected waits shrink with it."""
    h100 = replace(_settings(), start_temperature_c=40.0)
    h200_profile = profiles.read_profile("h200", ROOT / "config" / "devices")
    scale = float(h200_profile["cooldown_scale"])
    assert 0 < scale < 1
    h200 = replace(h100, cooldown_scale=scale)
    # SGEMM keeps its cool-downs (temperature moves its figures); HFTA's were dropped (its claims read
    # training rates: telemetry.cooldown_studies)
    assert h200.cooldown_s("sgemm_run") == pytest.approx(scale * h100.cooldown_s("sgemm_run"))
    assert h200.cooldown_s("sgemm_run") > 0


def test_the_variability_node_job_takes_one_gpus_run_not_one_per_gpu(workflow_copy: Path) -> None:
    """On four GPUs each backend's run is one node job measuring them all at once: the plan counts one
    GPU's run for it (and its spawned processes' start-up), where the per-GPU jobs counted four."""
    run = durations.modelled(PlannedJob("variability_run", {"backend": "cublas", "gpu": "0"}), _settings())
    node = durations.modelled(PlannedJob("variability_node", {"backend": "cublas", "run": "1"}), _settings())
    assert node == pytest.approx(run + durations.START_OWN_S)
    config = ("device=h100", "quick=true", "gpus=[0,1,2,3]")
    planned = _dry_run(workflow_copy, "variability", "--cores", "8", "--config", *config)
    backends = 2 if "rule build_kernels:" in planned else 1  # cublas and tiled where nvcc builds them
    assert f"measurements: variability {backends} job" in planned, planned[-600:]


# On a cluster the limit is how many SLURM jobs run at once, and a group job is one of them.


def test_on_a_cluster_a_group_job_runs_its_jobs_one_after_another_as_one_of_the_jobs_at_once() -> None:
    jobs = [
        PlannedJob("a", group="g"),
        PlannedJob("b", group="g"),
        PlannedJob("c"),
        PlannedJob("d", group="h", after=(0,)),
    ]
    seconds = [5, 7, 3, 1]
    # here a and b run side by side; on the cluster one after another in g's job, which d waits for
    assert schedule.simulate(jobs, seconds, cores=8, capacity={}).wall_s == 7
    assert schedule.simulate_cluster(jobs, seconds, slots=2).wall_s == 13  # g with c beside it, then d
    assert schedule.simulate_cluster(jobs, seconds, slots=1).wall_s == 16  # g, c, d
    assert schedule.simulate_cluster(jobs, seconds, slots=16).wall_s == 13


def test_a_group_job_waits_for_what_its_jobs_wait_for_outside_it() -> None:
    jobs = [PlannedJob("x", group="g", after=(2,)), PlannedJob("y", group="g"), PlannedJob("z")]
    units, seconds = schedule.group_units(jobs, [2, 3, 4])
    assert [(unit.rule, unit.after) for unit in units] == [("x", (1,)), ("z", ())] and seconds == [5, 4]
    # a job waiting for another of its own group is no wait of the group job
    inside = [PlannedJob("x", group="g"), PlannedJob("y", group="g", after=(0,))]
    assert schedule.group_units(inside, [2, 3])[0][0].after == ()


def test_the_cluster_estimate_says_it_is_a_wall_time_for_the_jobs_at_once() -> None:
    jobs = [PlannedJob("infer_deit", group="g"), PlannedJob("infer_deit", group="g"), PlannedJob("plot_deit")]
    settings = _settings()
    found = estimate.estimate(jobs, settings, Path("no-results"), 1, {}, cluster_jobs=16)
    line = estimate.describe(found, 1).splitlines()[0]
    assert "of wall time on the cluster with 16 SLURM jobs running at once (the profile's jobs:)" in line
    assert "the 1 claim-group jobs each measuring" in line and "with 1 core" not in line
    here = estimate.estimate(jobs, settings, Path("no-results"), 4, {})
    assert " with 4 cores;" in estimate.describe(here, 4) and here.cluster_jobs is None


def test_the_slurm_profiles_plan_is_estimated_for_its_jobs_at_once(workflow_copy: Path) -> None:
    """The quick H100 plan on the cluster: far below the serial sum a dry-run on one core prints."""
    import_installable("snakemake_executor_plugin_slurm")
    cluster = _dry_run(
        workflow_copy, "--profile", "profiles/slurm", "--quiet", "--config", "device=h100", "quick=true"
    )
    serial = _dry_run(workflow_copy, "--cores", "1", "--quiet", "--config", "device=h100", "quick=true")

    def wall(planned: str) -> float:
        printed = re.search(r"jobs planned, about (.+?) (?:with|of wall time)", planned)
        assert printed, planned[-3000:]
        units = {"h": 3600, "min": 60, "s": 1}
        return sum(int(value) * units[unit] for value, unit in re.findall(r"(\d+) (h|min|s)\b", printed[1]))

    # the jobs' wall times, without the run's own start, which both pay once
    jobs_cluster, jobs_serial = (wall(plan) - durations.RUN_START_S for plan in (cluster, serial))
    assert "SLURM jobs running at once" in cluster and jobs_cluster < jobs_serial / 2
