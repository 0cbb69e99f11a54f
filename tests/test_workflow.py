"""The Snakemake workflow: every profile plans (dry-run) anywhere; bad config fails before any job with the
key and what is allowed; lint is clean; and the cpu pipeline runs end to
end, writes protected raw data, and reruns one target alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from .conftest import ROOT, import_installable, path_without, run_snakemake
from .test_report_landing import made_landing_page

DEVICES = ["cpu", "v100", "a100", "h100", "h200", "rtx6000", "t4"]


@pytest.mark.parametrize("device", DEVICES)
def test_dry_run_for_every_profile(device: str, workflow_copy: Path) -> None:
    result = run_snakemake("-n", "--cores", "4", "--config", f"device={device}", cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-2000:]
    planned = result.stdout + result.stderr
    assert f"results/{device}/plots/sgemm.png" in planned
    assert f"results/{device}/plots/variability.png" in planned
    assert f"results/{device}/verdict.md" in planned and f"results/{device}/plots/runtimes.png" in planned
    assert f"results/{device}/plots/deit.png" in planned and f"results/{device}/plots/bert.png" in planned
    assert f"results/{device}/plots/hfta.png" in planned and f"results/{device}/tables/hfta_speedup.csv" in (
        planned
    )
    # the GPU profiles plan MPS points (recorded as skipped where the MPS control binary is absent); each
    # point in processes by purpose (gpurepro/more_processes/purpose.py): three where a claim reads it,
    # two for a host-paced point only a figure shows (eager DeiT-B in fp32), one for a GPU-bound one
    # (a compiled BERT-L, a graphed step); MPS at B=4 is a figure's on most profiles, a claim's where B=4
    # is the profile's best fused B (the T4's)
    assert (f"results/{device}/hfta/raw/resnet18/stock/mps_fp16_b4_run2.csv" in planned) == (device != "cpu")
    # hfta.graphs auto: each mode's graphed step beside the stock one, wherever a GPU is (once: the
    # repeats are for the stock steps the claims judge)
    assert (f"results/{device}/hfta/raw/resnet18/graphed/hfta_fp16_b4_run1.csv" in planned) == (
        device != "cpu"
    )
    assert "graphed/hfta_fp16_b4_run2.csv" not in planned
    if device != "cpu":  # the GPU profiles plan every mode; the cpu profile runs eager only
        assert f"results/{device}/inference/raw/deit/deit-b_b1_fp16_eager_run3.csv" in planned
        assert f"results/{device}/inference/raw/deit/deit-b_b1_fp16_cudagraph_run1.csv" in planned
        assert f"results/{device}/inference/raw/deit/deit-b_b1_fp32_eager_run2.csv" in planned
        assert "deit-b_b1_fp32_eager_run3.csv" not in planned
        assert f"results/{device}/inference/raw/bert/bert-l_s384_b32_fp16_compile_run1.csv" in planned
        assert "bert-l_s384_b32_fp16_compile_run2.csv" not in planned
    if device != "cpu" and shutil.which("nvcc"):
        assert "rule build_kernels:" in planned and f"results/{device}/sgemm/raw/tiled_n" in planned
    # a TF32 ResNet-50 point beside the AMP series (NVIDIA's AMP-over-TF32 ratio) wherever a GPU has TF32
    profile = yaml.safe_load((ROOT / "config" / "devices" / f"{device}.yaml").read_text())
    has_tf32 = profile["kind"] == "gpu" and "tf32" in profile["precisions"]
    assert (
        re.search(rf"results/{device}/ddp/raw/resnet50_\S+_tf32_b\d+_1gpu\.csv", planned) is not None
    ) == has_tf32


def test_a_quick_run_measures_behind_every_claim_the_gpu_can_serve(workflow_copy: Path) -> None:
    """quick=true on one H100: the original study's N=25536, HFTA at the profile's fused_best_b, the
    inference points the artifact's claims name, the reference rates; the 2-GPU DDP point is left out
    (one GPU here), which the verdict then reports as needing 2 GPUs."""
    result = run_snakemake("-n", "--cores", "4", "--config", "device=h100", "quick=true", cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-2000:]
    planned = result.stdout + result.stderr
    best_b = yaml.safe_load((ROOT / "config" / "devices" / "h100.yaml").read_text())["hfta"]["fused_best_b"]
    # the quick run's SGEMM backends are the kernels, where nvcc can build them; torch where it cannot
    kernels = shutil.which("nvcc") is not None
    for backend in ("cublas", "tiled", "torch"):
        assert (f"sgemm/raw/{backend}_n25536.csv" in planned) == (kernels != (backend == "torch")), backend
    for path in (
        f"hfta/raw/resnet18/stock/hfta_fp16_b{best_b}_run1.csv",
        f"hfta/raw/resnet18/stock/mps_fp16_b{best_b}_run1.csv",
        "hfta/raw/resnet18/stock/serial_fp16_b1_run1.csv",
        "inference/raw/deit/deit-t_b1_fp16_eager_run3.csv",
        "inference/raw/deit/deit-b_b1_fp16_cudagraph_run1.csv",
        "inference/raw/bert/bert-b_s384_b1_fp16_eager_run3.csv",
        "inference/raw/bert/bert-l_s320_b1_fp16_eager_run3.csv",
        f"hfta/raw/resnet18/stock/hfta_fp16_b{best_b}_run2.csv",
        "hfta/raw/resnet18/stock/serial_fp16_b1_run3.csv",
        "reference/raw/rates.csv",
        "ddp/raw/resnet50_synthetic-224px_fp16_b256_1gpu.csv",
    ):
        assert f"results/h100/{path}" in planned, path
    # every HFTA claim reads the fused array's best B: the host-paced B=8 points are left out
    assert "hfta_fp16_b8_" not in planned and "mps_fp16_b8_" not in planned
    # one GPU, one run: the variability study reads the SGEMM study's N=25536 points, which are its
    # points to the letter, instead of measuring them again
    assert not re.search(r"gpurepro sgemm .*--out results/h100/variability/raw/", planned)
    variability_inputs = re.search(r"rule variability:\n\s+input: (.*)\n", planned)[1].split(", ")
    assert variability_inputs and all(
        re.fullmatch(r"results/h100/sgemm/raw/\w+_n25536\.csv", p) for p in variability_inputs
    )
    assert "bert-l_s128" not in planned and "_2gpu.csv" not in planned
    # every point a claim reads runs in three processes, GPU-bound ones too (the profile's quick repeats);
    # a fourth is the rounds of more processes' to plan, once a claim is found inconclusive. The CUDA-graph
    # point, which no claim judges (it only says how much of eager's latency is the host's), runs once.
    assert f"hfta_fp16_b{best_b}_run3" in planned and "deit-b_b1_fp16_eager_run3" in planned
    assert "deit-b_b1_fp16_cudagraph_run1" in planned and "cudagraph_run2" not in planned
    assert "_run4" not in planned and "checkpoint more_processes:" in planned
    # serial's rate is one model's at any B: measured at the smaller B only; the claims judge stock steps
    assert f"serial_fp16_b{best_b}_run1" not in planned and "resnet18/graphed/" not in planned
    # no cool-down before a quick run's inference, HFTA and SGEMM points (config telemetry.quick)
    for command in re.findall(r"gpurepro (?:infer|hfta|sgemm) .*", planned):
        assert "--cooldown-max-wait-s 0.0 " in command, command


def _job_counts(planned: str) -> dict[str, int]:
    """Snakemake's job stats of a dry-run: jobs planned per rule."""
    table = planned.split("Job stats:")[1].split("total")[0]
    return {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.MULTILINE)}


def _plan_variability(workflow_copy: Path, *config: str) -> str:
    result = run_snakemake(
        "variability", "-n", "--cores", "8", "--config", "device=h100", *config, cwd=workflow_copy
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout + result.stderr


def test_on_four_gpus_each_backends_run_is_one_node_job(workflow_copy: Path) -> None:
    """The SGEMM study runs on one GPU only: with four selected, the variability study measures all four
    at once, one node job per backend and run (started through a barrier, as a campaign measures a node),
    writing each GPU's raw file as the per-GPU jobs named it; no per-GPU job is left."""
    planned = _plan_variability(workflow_copy, "quick=true", "gpus=[0,1,2,3]")
    backends = ["cublas", "tiled"] if "rule build_kernels:" in planned else ["torch"]
    counts = _job_counts(planned)
    assert counts["variability_node"] == len(backends) and "variability_run" not in counts
    for backend in backends:
        assert re.search(
            rf"gpurepro campaign node 25536 10 --runs 1 --first-run 1 --backend {backend} --gpus 0,1,2,3 "
            rf"--out-dir results/h100/variability/raw --record-prefix {backend}_run1\. ", planned
        ), backend  # fmt: skip
        for gpu in range(4):
            assert f"results/h100/variability/raw/{backend}_gpu{gpu}_run1.csv" in planned
    assert "gpu_0=1, gpu_1=1, gpu_2=1, gpu_3=1, gpu=4" in planned
    assert not re.search(r"gpurepro sgemm .*--out results/h100/variability/raw/", planned)
    # every run its own job, so a rerun measures only the runs missing; run 2 follows run 1
    full = _plan_variability(workflow_copy, "gpus=[0,1]")
    assert _job_counts(full)["variability_node"] == 3 * len(backends)
    run2 = full.split(f"--first-run 2 --backend {backends[0]} ")[0].rsplit("rule variability_node:", 1)[1]
    assert "input: " in run2 and f"variability/raw/{backends[0]}_gpu0_run1.csv" in run2


def test_one_gpu_or_noise_keeps_the_per_gpu_jobs(workflow_copy: Path) -> None:
    """With one GPU each run is a job of its own, as before; with noise on the other GPUs, each GPU is
    measured alone while the others carry the noise, one job per GPU and run."""
    one = _job_counts(_plan_variability(workflow_copy, "gpus=[0]"))
    assert "variability_node" not in one and one["variability_run"] >= 2
    noisy = _plan_variability(workflow_copy, "quick=true", "gpus=[0,1,2,3]", "variability={noise: resnet50}")
    counts = _job_counts(noisy)
    backends = 2 if "rule build_kernels:" in noisy else 1
    assert "variability_node" not in counts and counts["variability_run"] == 4 * backends
    assert re.search(
        r"gpurepro sgemm 25536 10 3 .*--noise-workload resnet50 .*_gpu3_run1_noise-resnet50", noisy
    )


def test_a_quick_run_on_eight_gpus_measures_the_eight_gpu_ddp_point(workflow_copy: Path) -> None:
    """NVIDIA's 8-GPU ResNet-50 claims read a DDP point on eight GPUs: with eight selected, quick plans it
    (and every smaller count); with four, the counts up to four, the 8-GPU point said to be left out."""
    raw = "results/h100/ddp/raw/resnet50_synthetic-224px_fp16_b256_{}gpu.csv"
    for gpus, counts in (("[0,1,2,3,4,5,6,7]", (1, 2, 4, 8)), ("[0,1,2,3]", (1, 2, 4))):
        result = run_snakemake(
            "-n", "--cores", "32", "--config", "device=h100", "quick=true", f"gpus={gpus}", cwd=workflow_copy
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        planned = result.stdout + result.stderr
        for count in (1, 2, 4, 8):
            assert (raw.format(count) in planned) == (count in counts), (gpus, count)
    assert "GPU counts [8] of profile h100 left out: 4 GPU(s) selected here" in planned


def test_round_r_of_a_point_waits_for_round_r_minus_1_of_every_point(workflow_copy: Path) -> None:
    """Repeats run in rounds: the second process of DeiT-T waits for the first of every DeiT point, so a
    drift of the host over the run spreads over all points (gpurepro/rounds.py)."""
    result = run_snakemake(
        "-n", "--cores", "4", "--config", "device=h100", "quick=true", "--forceall",
        "results/h100/inference/raw/deit/deit-t_b1_fp16_eager_run2.csv", "--printshellcmds", "--debug-dag",
        cwd=workflow_copy,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    planned = result.stdout + result.stderr
    for model in ("deit-t", "deit-s", "deit-b"):
        assert f"inference/raw/deit/{model}_b1_fp16_eager_run1.csv" in planned, model
    assert "deit-b_b1_fp16_cudagraph_run1.csv" in planned
    assert "run2.csv" in planned and "deit-s_b1_fp16_eager_run2" not in planned


def test_the_quick_h100_plan_trains_resnet50_in_tf32_on_one_gpu_beside_amp(workflow_copy: Path) -> None:
    """NVIDIA's AMP-over-TF32 ResNet-50 ratio needs a TF32 run: one 1-GPU job at the series' settings but
    the precision and, as DeepLearningExamples trains TF32, the memory format (NCHW; AMP runs NHWC),
    aggregated into the ddp table beside the fp16 runs."""
    result = run_snakemake("-n", "--cores", "4", "--config", "device=h100", "quick=true", cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-2000:]
    planned = result.stdout + result.stderr
    raw = "results/h100/ddp/raw/resnet50_synthetic-224px_{}_b256_1gpu.csv"
    commands = {
        precision: re.search(
            rf"gpurepro train resnet50 --gpus 0 (.*) --out {re.escape(raw.format(precision))}", planned
        )
        for precision in ("fp16", "tf32")
    }
    assert commands["fp16"] and commands["tf32"], "a 1-GPU fp16 or tf32 training job is not planned"
    assert commands["tf32"][1] == commands["fp16"][1].replace(
        "--precision fp16 --channels-last", "--precision tf32 --no-channels-last"
    )
    ddp_inputs = re.search(r"rule ddp:\n\s+input: (.*)\n", planned)[1].split(", ")
    assert ddp_inputs == [raw.format("fp16"), raw.format("tf32")]


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])
def test_every_gpu_profile_names_the_fused_arrays_best_b_in_its_quick_sweep(device: str) -> None:
    hfta = yaml.safe_load((ROOT / "config" / "devices" / f"{device}.yaml").read_text())["hfta"]
    assert hfta["fused_best_b"] in hfta["quick"]["b_values"]


def test_kernels_are_skipped_plainly_without_nvcc(
    workflow_copy: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = {**os.environ, "PATH": path_without(["nvcc"], tmp_path_factory.mktemp("bin"))}  # hidden if here
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", "device=h100"],
        cwd=workflow_copy, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "nvcc not found: the cublas and tiled SGEMM kernels are skipped" in result.stderr
    assert "rule build_kernels:" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "devcie=v100",
            "Additional properties are not allowed ('devcie' was unexpected); allowed keys: ",
        ),
        ("device=v10", "key device: 'v10' is not one of ['auto', 'cpu'"),
        ("quick=maybe", "key quick: 'maybe' is not of type 'boolean'"),
        ("gpus=[-1]", "key gpus.0: -1 is less than the minimum of 0"),
        ("device_check=ignore", "key device_check: 'ignore' is not one of ['error', 'warn']"),
        ("hfta={graphs: sometimes}", "key hfta.graphs: 'sometimes' is not one of ['auto', 'on', 'off'"),
        (
            "hfta={graphs: on}",
            "config key hfta.graphs: 'on' replays CUDA graphs and needs a GPU profile, not cpu",
        ),
    ],
)
def test_bad_config_fails_before_any_job(override: str, message: str, workflow_copy: Path) -> None:
    result = run_snakemake("-n", "--cores", "1", "--config", override, cwd=workflow_copy)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("hfta", "graphed", "said"),
    [
        ("{graphs: off}", False, ""),
        ("{graphs: on}", True, ""),
        ("{optimizer: adamw}", False, "hfta.graphs auto: adamw steps cannot be graphed; stock steps only"),
    ],
)
def test_graphed_hfta_points_are_planned_as_config_hfta_graphs_says(
    hfta: str, graphed: bool, said: str, workflow_copy: Path
) -> None:
    result = run_snakemake("-n", "--cores", "1", "--config", "device=h100", f"hfta={hfta}", cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-2000:]
    planned = result.stdout + result.stderr
    assert "hfta/raw/resnet18/stock/serial_fp16_b1_run1.csv" in planned
    assert ("hfta/raw/resnet18/graphed/serial_fp16_b1_run1.csv" in planned) == graphed
    # one model trained by one process is serial's B=1 point: concurrent starts at B=2
    assert "stock/concurrent_fp16_b1_run1.csv" not in planned and "stock/concurrent_fp16_b2_run1" in planned
    assert "stock/mps_fp16_b1_run1.csv" not in planned
    # the fused array at B=8, host-paced and read by no claim on an H100 (its best B is 32): two processes
    assert "stock/hfta_fp16_b8_run2.csv" in planned and "stock/hfta_fp16_b8_run3.csv" not in planned
    # graphed steps are the project's addition: once, the paper's repeats are for the stock comparisons
    assert "graphed/hfta_fp16_b8_run2.csv" not in planned
    assert ("--graphs on" in planned) == graphed and "--graphs off" in planned
    assert said in result.stderr


def test_graphs_on_with_an_optimizer_that_cannot_be_captured_fails_at_start(workflow_copy: Path) -> None:
    result = run_snakemake(
        "-n",
        "--cores",
        "1",
        "--config",
        "device=h100",
        "hfta={graphs: on, optimizer: adamw}",
        cwd=workflow_copy,
    )
    assert result.returncode != 0
    message = "config key hfta.graphs: 'on' captures the fused SGD step; hfta.optimizer is adamw"
    assert message in result.stdout + result.stderr


def test_gpus_list_from_the_command_line_is_accepted(workflow_copy: Path) -> None:
    result = run_snakemake("-n", "--cores", "1", "--config", "device=h100", "gpus=[0]", cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-2000:]


def test_slurm_profile_plans_one_gpu_per_job_without_slurm_installed(workflow_copy: Path) -> None:
    import_installable("snakemake_executor_plugin_slurm")
    result = run_snakemake(
        "--profile", "profiles/slurm", "-n", "--config", "device=h100", "gpus=[0,1]", cwd=workflow_copy
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    planned = result.stdout + result.stderr
    assert "gpu=1, gpu_model=h100" in planned and "gpu_0=" not in planned
    # each job measures GPU 0 of its own allocation, whichever variability slot it is
    assert re.search(r"gpurepro sgemm \d+ \d+ 0 .*variability/raw/\w+_gpu1_run1\.csv", planned)
    assert "rule verdict:" in planned and "slurm_partition=gpu" in planned


def test_cluster_needs_a_named_profile(workflow_copy: Path) -> None:
    import_installable("snakemake_executor_plugin_slurm")
    result = run_snakemake("--profile", "profiles/slurm", "-n", cwd=workflow_copy)
    assert result.returncode != 0
    message = "device=auto with cluster.enabled: the GPUs are on the compute nodes, not here"
    assert message in result.stdout + result.stderr


def test_gpus_on_the_cpu_profile_are_said_to_be_ignored(workflow_copy: Path) -> None:
    result = run_snakemake("-n", "--cores", "1", "--config", "device=cpu", "gpus=[99]", cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "config gpus=[99] is ignored: profile cpu measures the CPU" in result.stdout + result.stderr


def test_bad_claim_file_fails_before_any_job(workflow_copy: Path) -> None:
    claims = workflow_copy / "config" / "expected" / "seed_power_variability.yaml"
    claims.write_text(claims.read_text().replace("relative: 0.03", "relative: -0.03", 1))
    result = run_snakemake("-n", "--cores", "1", "--config", "device=v100", cwd=workflow_copy)
    assert result.returncode != 0
    assert (
        "seed_power_variability.yaml: key claims.0.tolerance.relative: -0.03 is less than the minimum of 0 "
        "(claim seed-n25536-on-plateau)"
    ) in result.stdout + result.stderr


def test_negative_size_in_a_profile_names_the_key(workflow_copy: Path) -> None:
    profile_file = workflow_copy / "config/devices/v100.yaml"
    profile = yaml.safe_load(profile_file.read_text())
    profile["sgemm"]["sizes"] = [-4096]
    profile_file.write_text(yaml.safe_dump(profile))
    result = run_snakemake("-n", "--cores", "1", "--config", "device=v100", cwd=workflow_copy)
    assert result.returncode != 0
    assert "config/devices/v100.yaml: key sgemm.sizes.0: -4096 is less than the minimum of 1" in (
        result.stdout + result.stderr
    )


def test_serial_may_run_at_a_b_the_other_modes_do_not(workflow_copy: Path) -> None:
    profile_file = workflow_copy / "config/devices/v100.yaml"
    profile = yaml.safe_load(profile_file.read_text())
    profile["hfta"]["serial_b_values"] = [64]
    profile_file.write_text(yaml.safe_dump(profile))
    result = run_snakemake("-n", "--cores", "1", "--config", "device=v100", cwd=workflow_copy)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "stock/serial_fp32_b64_run1.csv" in output
    assert "stock/serial_fp32_b1_run1.csv" not in output
    assert not re.search(r"/(concurrent|mps|hfta)_\w+_b64_run", output)
    assert "stock/hfta_fp32_b1_run1.csv" in output


def test_lint_is_clean_with_the_default_config(workflow_copy: Path) -> None:
    # Every rule names the project's own image (config container.apptainer_image, used under
    # --sdm apptainer), so even the software lint has nothing to say.
    result = run_snakemake("--lint", cwd=workflow_copy)
    output = result.stdout + result.stderr
    assert "Congratulations, your workflow is in a good condition!" in output, output


def test_lint_accepts_the_image_by_a_pullable_address(workflow_copy: Path) -> None:
    image = "container={apptainer_image: docker://example.org/gpurepro:dev}"
    result = run_snakemake("--lint", "--config", image, cwd=workflow_copy)
    output = result.stdout + result.stderr
    assert "Specify a conda environment or container for each rule" not in output, output
    assert "Lints for rule" not in output, output


@pytest.mark.pipeline
def test_cpu_pipeline_end_to_end(workflow_copy: Path) -> None:
    test_config = workflow_copy / "test-config.yaml"
    test_config.write_text(
        yaml.safe_dump(
            {
                "telemetry": {
                    "rate_hz": 50,
                    "idle_seconds": 0.5,
                    "min_energy_window_s": 0.5,
                    "cooldown_max_wait_s": 0,
                },
                "inference": {"min_run_time_s": 0.2, "warmup": 1, "energy_window_s": 0.5},
            }
        )
    )
    args = ["--cores", "2", "--configfile", str(test_config), "--config", "device=auto", "quick=true"]
    result = run_snakemake(*args, cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-4000:]

    results = workflow_copy / "results" / "cpu"
    table = pd.read_csv(results / "tables" / "sgemm.csv")
    assert sorted(table["n"].unique()) == [256, 512]  # the cpu profile's quick sizes
    rate = table[(table["metric"] == "rate") & (table["statistic"] == "median")]
    assert (rate["value"] > 0).all() and (rate["unit"] == "TFLOP/s").all()
    assert (results / "plots" / "sgemm.png").read_bytes()[:4] == b"\x89PNG"
    for raw in (results / "sgemm" / "raw").iterdir():
        assert not os.stat(raw).st_mode & stat.S_IWUSR, f"{raw} is not write-protected"
    # every job was forked from the run's fork server, which left with the run; its sidecar names the
    # config the run kept
    for sidecar in (results / "sgemm" / "raw").glob("torch_n*[0-9].provenance.json"):
        recorded = json.loads(sidecar.read_text())
        assert recorded["launch"].startswith("forked from fork server ")
        kept = yaml.safe_load((results / "config" / f"{recorded['config_hash']}.yaml").read_text())
        assert kept["device"] == "auto" and kept["quick"] is True
    assert "listening at" in (results / "logs" / "forkserver.log").read_text()
    assert sorted(p.name for p in (results / "logs" / "sgemm").iterdir()) == [
        "aggregate.log",
        "plot.log",
        "torch_n256.log",
        "torch_n512.log",
    ]
    assert len(list((results / "benchmarks" / "sgemm").iterdir())) == 4  # the runs, aggregate, plot

    reps = pd.read_csv(results / "tables" / "variability_reps.csv")
    assert sorted(reps["run"].unique()) == [1, 2] and set(reps["device"]) == {"cpu"}
    summary = pd.read_csv(results / "tables" / "variability_summary.csv")
    assert {"time", "rate", "rate_vs_median_gpu", "throttled_reps"} <= set(summary["metric"])
    assert (results / "plots" / "variability.png").read_bytes()[:4] == b"\x89PNG"

    for family, point, model in (
        ("deit", "deit-t_b1_fp32_eager", "deit-t"),
        ("bert", "bert-b_s32_b1_fp32_eager", "bert-b"),
    ):
        table = pd.read_csv(results / "tables" / f"inference_{family}.csv")
        assert set(table["model"]) == {model} and set(table["status"]) == {"ok"}  # the cpu profile's point
        # the cpu profile runs each inference point in two processes: one row set per process
        latency = table[(table["metric"] == "latency") & (table["statistic"] == "median")]
        assert sorted(latency["run"]) == [1, 2] and (latency["value"] > 0).all()
        assert set(latency["unit"]) == {"ms"}
        assert {"energy_per_inference", "idle_power"} <= set(table["metric"])
        assert (results / "plots" / f"{family}.png").read_bytes()[:4] == b"\x89PNG"
        # and the across-process table: the figure over both processes with its interval across them
        processes = pd.read_csv(results / "tables" / f"inference_{family}_processes.csv")
        over = processes[(processes["metric"] == "latency") & (processes["per_process"] == "median")]
        over = over.set_index("statistic")["value"]
        assert over["processes"] == 2 and over["ci_low"] <= over["median"] <= over["ci_high"]
        # each figure names its processes' GPUs by UUID: none on the cpu, whose "GPU" is the CPU
        assert "gpu_uuids" in processes and processes["gpu_uuids"].isna().all()
        raw = results / "inference" / "raw" / family
        assert sorted(p.name for p in raw.iterdir()) == sorted(
            f"{point}_run{run}{suffix}"
            for run in (1, 2)
            for suffix in (".csv", ".provenance.json", ".telemetry.csv", ".telemetry.provenance.json")
        )
        for path in raw.iterdir():
            assert not os.stat(path).st_mode & stat.S_IWUSR, f"{path} is not write-protected"
        assert (results / "logs" / "inference" / family / f"{point}_run2.log").is_file()

    hfta = pd.read_csv(results / "tables" / "hfta.csv")  # the cpu profile's quick sweep: resnet18, B 1 and 2
    assert set(hfta["mode"]) == {"serial", "concurrent", "hfta"} and set(hfta["status"]) == {"ok"}
    assert sorted(hfta["b"].unique()) == [1, 2]
    assert (results / "plots" / "hfta.png").read_bytes()[:4] == b"\x89PNG"
    assert "speedup" in set(pd.read_csv(results / "tables" / "hfta_speedup.csv")["metric"])

    # this device's reference rates, which the verdict scales absolute claims by
    reference = pd.read_csv(results / "tables" / "reference.csv")
    medians = reference[reference["statistic"] == "median"].set_index("metric")
    assert set(medians.index) == {"fp32_gemm", "fp16_gemm", "memory_bandwidth"}  # no power limit on a CPU
    assert (medians["value"] > 0).all()

    # the end of the pipeline: every shipped claim is about GPUs, so on the cpu each is not measured, and
    # says why; the page opens with one line per paper
    verdict = pd.read_csv(results / "verdict.csv")
    assert len(verdict) >= 20 and set(verdict["grade"]) == {"not measured"}
    # a claim that reads another's measurement says so ("... counted once there"), still not measured
    assert verdict["status"].str.startswith("not measured").all()
    assert verdict["detail"].str.startswith("no GPU in this run").all()
    # where each claim's sides ran: the cpu's rows name no GPU, and its jobs overlapped on its cores
    sides = verdict["sides"].fillna("")
    assert (
        sides.str.startswith("no GPU in the run (the CPU)").any()
        and sides.str.contains("beside them: ").any()
    )
    page = (results / "verdict.md").read_text()
    assert page.index("## Per paper") < page.index("## Regression checks")
    assert "| SC22 GPU variability (Sinha et al.) | **not measured (0 of 2 claims testable here)** |" in page
    assert (results / "verdict.html").is_file()
    runtimes = pd.read_csv(results / "tables" / "runtimes.csv")
    assert {"sgemm", "variability"} <= set(runtimes["step"]) and "report" not in set(runtimes["step"])
    assert (results / "plots" / "runtimes.png").read_bytes()[:4] == b"\x89PNG"
    assert not (workflow_copy / "results" / "combined").exists()  # one device: nothing to combine
    report = run_snakemake("--report", "report.html", *args, cwd=workflow_copy)
    assert report.returncode == 0, report.stderr[-4000:]
    html = (workflow_copy / "report.html").read_text()
    assert all(name in html for name in ("sgemm.png", "variability.png", "verdict.html", "runtimes.png"))
    assert "Reproduction verdict: profile cpu" in html  # the landing page: the verdict per paper
    assert "System Message" not in html  # docutils parsed every page of it (issue 42)

    # a changed device check (or any key the measurements do not depend on) reruns nothing
    nothing = run_snakemake("-n", *args, "device_check=warn", cwd=workflow_copy)
    assert "Nothing to be done" in nothing.stdout + nothing.stderr

    # a level an earlier run's cool-downs learned (telemetry/cooldown.py) is not the next run's
    learned = results / "cooldown" / "GPU-earlier.levels"
    learned.parent.mkdir(exist_ok=True)
    learned.write_text("48.0\n")
    replot = run_snakemake("plot_sgemm", "--forcerun", "plot_sgemm", *args, cwd=workflow_copy)
    assert replot.returncode == 0, replot.stderr[-4000:]
    log = replot.stdout + replot.stderr
    assert "rule plot_sgemm:" in log and "rule sgemm_torch:" not in log
    assert not learned.exists()

    replot = run_snakemake("plot_hfta", "--forcerun", "plot_hfta", *args, cwd=workflow_copy)
    assert replot.returncode == 0, replot.stderr[-4000:]
    log = replot.stdout + replot.stderr
    assert "rule plot_hfta:" in log and "rule hfta_point:" not in log and "rule hfta:" not in log

    replot = run_snakemake("plot_bert", "--forcerun", "plot_bert", *args, cwd=workflow_copy)
    assert replot.returncode == 0, replot.stderr[-4000:]
    log = replot.stdout + replot.stderr
    assert "rule plot_bert:" in log and "rule infer_bert:" not in log and "rule inference_bert:" not in log

    # the report again, its landing page a GPU run's verdict (made tables: reasons not measured, empty
    # cells), which the cpu run's all-"not measured" page never shows; before other devices' results
    # join (whose combined tables the report would then expect). The page as it was opened the report
    # on a docutils error (issue 42).
    (results / "verdict_summary.rst").write_text(made_landing_page())
    report = run_snakemake("--report", "gpu-report.html", *args, cwd=workflow_copy)
    assert report.returncode == 0, report.stderr[-4000:]
    html = (workflow_copy / "gpu-report.html").read_text()
    assert "Reproduction verdict: profile h100" in html and "System Message" not in html

    # another device's results beside these (copied from another machine): tables across devices
    other = workflow_copy / "results" / "h200" / "tables"
    other.mkdir(parents=True)
    pd.DataFrame(
        [{"study": "sgemm", "profile": "h200", "backend": "cublas", "n": 8192, "metric": "rate",
          "statistic": "median", "value": 51.2, "unit": "TFLOP/s"}]
    ).to_csv(other / "sgemm.csv", index=False)  # fmt: skip
    planned = run_snakemake("-n", *args, cwd=workflow_copy)
    assert "results/combined/tables/sgemm.csv" in planned.stdout + planned.stderr
    assert "results/combined/tables/variability_summary.csv" in planned.stdout + planned.stderr
    combined = run_snakemake("results/combined/tables/sgemm.csv", *args, cwd=workflow_copy)
    assert combined.returncode == 0, combined.stderr[-4000:]
    table = pd.read_csv(workflow_copy / "results" / "combined" / "tables" / "sgemm.csv")
    assert set(table["profile"]) == {"cpu", "h200"} and "unit" in table.columns
