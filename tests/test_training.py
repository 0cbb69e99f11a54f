"""ResNet-50 training on the CPU: the raw table and its summary (warm-up left out), two gloo processes
under torchrun kept in step by DDP, the recipe's label smoothing, the ddp table and figure, a failed
rank filed as a failed point, clear errors, and the noise workload that leaves no process behind."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import torch

from gpurepro import cli
from gpurepro.errors import GpureproError
from gpurepro.results import read_sidecar, sidecar_path
from gpurepro.training import failures
from gpurepro.training.batches import DataOptions, make_batches, plan_data
from gpurepro.training.loop import TrainSettings
from gpurepro.training.model import loss_function
from gpurepro.training.noise import NoiseSettings, noise_during
from gpurepro.training.plan import ddp_precisions, ddp_runs, usable_gpu_counts, workers_per_process
from gpurepro.training.processes import background_process

from .conftest import HAVE_GPU, gone_within, needs_gpu, run_gpurepro, running

TINY = ["--gpus", "cpu", "--profile", "cpu", "--image-size", "32", "--batch-size", "2", "--warmup", "1",
        "--log-interval", "1", "--iterations", "3"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """One process (in this process, no DDP wrapper) and two gloo processes started through torchrun."""
    folder = tmp_path_factory.mktemp("ddp")
    single, double = folder / "resnet50_1gpu.csv", folder / "resnet50_2gpu.csv"
    assert cli.main(["train", "resnet50", *TINY, "--out", str(single)]) == 0
    result = run_gpurepro("train", "resnet50", *TINY, "--nproc", "2", "--out", str(double))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "torch.distributed.run --standalone --nproc-per-node=2" in result.stderr
    return {1: single, 2: double}


def test_few_iterations_write_table_and_sidecar_without_warmup(runs: dict[int, Path]) -> None:
    rows = pd.read_csv(runs[1])
    assert list(rows["phase"]) == ["warmup", "timed", "timed", "timed"]
    assert set(rows["status"]) == {"ok"} and set(rows["world_size"]) == {1}
    assert set(rows["image_size"]) == {32} and set(rows["data"]) == {"synthetic-32px"}
    sidecar = read_sidecar(runs[1])
    summary = sidecar["training"]
    timed = rows[rows["phase"] == "timed"]
    assert (
        summary["images_per_s"] > 0 and summary["timed_iterations"] == 3 and summary["warmup_iterations"] == 1
    )
    assert summary["images_per_s"] == pytest.approx(timed["images"].sum() / timed["seconds"].sum())
    with_warmup = rows["images"].sum() / rows["seconds"].sum()
    assert summary["images_per_s"] != pytest.approx(with_warmup)  # the warm-up row is really left out
    assert sidecar["software"]["torch"] == torch.__version__ and "git" in sidecar


def test_two_gloo_processes_stay_in_step(runs: dict[int, Path]) -> None:
    rows = pd.read_csv(runs[2])
    assert set(rows["world_size"]) == {2} and set(rows["devices"]) == {"cpu"}
    # rank 0 alone writes: one table, and each step counts both ranks' images
    assert (rows["images"] == rows["iterations"] * 2 * 2).all()
    summary = read_sidecar(runs[2])["training"]
    assert summary["world_size"] == 2
    assert summary["images_per_s_per_gpu"] == pytest.approx(summary["images_per_s"] / 2)
    checksums = summary["parameter_checksums"]
    assert len(checksums) == 2 and checksums[0] == checksums[1] and summary["parameters_equal_across_ranks"]


def _tiny_settings(seed: int = 0) -> TrainSettings:
    data = DataOptions("synthetic", None, "tiny-imagenet", 32, 10, 0, seed)
    return TrainSettings("resnet50", 2, "fp32", False, 0, 2, None, 1, data)


def test_ranks_see_different_data_so_equal_parameters_mean_ddp_averaged() -> None:
    """Each rank draws its own synthetic batches: without DDP their parameters would drift apart."""
    device = torch.device("cpu")
    settings = _tiny_settings()
    plan, _ = plan_data(settings.data)
    first, second = (
        next(make_batches(settings.data, plan, None, 2, device, rank, channels_last=False)) for rank in (0, 1)
    )
    assert first[0].shape == (2, 3, 32, 32) and not torch.equal(first[0], second[0])
    again = next(make_batches(settings.data, plan, None, 2, device, 0, channels_last=False))
    assert torch.equal(first[0], again[0])  # and each rank's data is reproducible from the seed


def test_label_smoothing_is_in_the_loss() -> None:
    criterion = loss_function()
    assert criterion.label_smoothing == pytest.approx(0.1)
    logits = torch.tensor([[10.0, 0.0, 0.0]])
    target = torch.tensor([0])
    plain = torch.nn.functional.cross_entropy(logits, target)
    assert float(criterion(logits, target)) > float(plain) + 0.1  # smoothing penalises confidence


def test_ddp_table_and_plot(runs: dict[int, Path], tmp_path: Path) -> None:
    table_path, plot_path = tmp_path / "ddp.csv", tmp_path / "ddp.png"
    assert cli.main(["aggregate", "ddp", str(runs[2]), str(runs[1]), "--out", str(table_path)]) == 0
    table = pd.read_csv(table_path)

    def value(gpus: int, metric: str, statistic: str) -> float:
        row = table[(table["gpus"] == gpus) & (table["metric"] == metric) & (table["statistic"] == statistic)]
        return float(row["value"].item())

    one, two = value(1, "throughput", "total"), value(2, "throughput", "total")
    assert one == pytest.approx(read_sidecar(runs[1])["training"]["images_per_s"])
    assert value(2, "speedup_vs_1_gpu", "value") == pytest.approx(two / one)
    assert value(2, "scaling_efficiency", "value") == pytest.approx(two / one / 2 * 100)
    assert value(1, "scaling_efficiency", "value") == pytest.approx(100)
    assert value(2, "throughput", "per_gpu") == pytest.approx(two / 2)
    assert cli.main(["plot", "ddp", str(table_path), "--out", str(plot_path)]) == 0
    assert plot_path.read_bytes()[:4] == b"\x89PNG"


def _as_precision(raw: Path, precision: str, folder: Path, speed: float) -> Path:
    """A copy of a raw run relabelled `precision` and `speed` times as fast: a compared 1-GPU point
    (tf32 beside AMP) without training again."""
    rows = pd.read_csv(raw).assign(precision=precision)
    rows["seconds"] = rows["seconds"] / speed
    out = folder / raw.name.replace("1gpu", f"{precision}_1gpu")
    rows.to_csv(out, index=False)
    shutil.copy(sidecar_path(raw), sidecar_path(out))
    return out


def test_ddp_table_keeps_a_compared_precision_apart(runs: dict[int, Path], tmp_path: Path) -> None:
    """A 1-GPU tf32 run beside the scaling series: its own rows, its speedup against itself, and the
    series' rows exactly as without it."""
    tf32 = _as_precision(runs[1], "tf32", tmp_path, speed=2.0)
    alone, both = tmp_path / "alone.csv", tmp_path / "both.csv"
    assert cli.main(["aggregate", "ddp", str(runs[1]), str(runs[2]), "--out", str(alone)]) == 0
    assert cli.main(["aggregate", "ddp", str(runs[1]), str(runs[2]), str(tf32), "--out", str(both)]) == 0
    alone_rows, both_rows = pd.read_csv(alone), pd.read_csv(both)
    series = both_rows[both_rows["precision"] == "fp32"].reset_index(drop=True)
    pd.testing.assert_frame_equal(series, alone_rows)
    compared = both_rows[both_rows["precision"] == "tf32"].set_index(["metric", "statistic"])["value"]
    assert set(both_rows.loc[both_rows["precision"] == "tf32", "gpus"]) == {1}
    fp32_one = alone_rows.set_index(["gpus", "metric", "statistic"]).loc[(1, "throughput", "total"), "value"]
    assert compared[("throughput", "total")] == pytest.approx(2 * fp32_one)
    assert compared[("speedup_vs_1_gpu", "value")] == pytest.approx(1.0)
    plot_path = tmp_path / "ddp.png"
    assert cli.main(["plot", "ddp", str(both), "--out", str(plot_path)]) == 0
    assert plot_path.read_bytes()[:4] == b"\x89PNG"


def test_ddp_plan_adds_one_gpu_runs_of_the_compared_precisions() -> None:
    train = {"precision": "fp16", "compare_precisions": ["tf32"]}
    main, compared = ddp_precisions(train, ["fp32", "tf32", "fp16", "bf16"])
    assert ddp_runs([1, 2, 4], main, compared) == [(1, "fp16"), (2, "fp16"), (4, "fp16"), (1, "tf32")]
    assert ddp_precisions({"precision": "fp32"}, ["fp32"]) == ("fp32", [])
    with pytest.raises(GpureproError, match=r"key train.compare_precisions: tf32 is not in the profile's"):
        ddp_precisions(train, ["fp32", "fp16"])
    with pytest.raises(GpureproError, match=r"repeats train.precision fp16"):
        ddp_precisions({"precision": "fp16", "compare_precisions": ["fp16"]}, ["fp16"])


def test_out_of_memory_is_recorded_as_a_failed_point(tmp_path: Path, capsys) -> None:
    """A classifier of a billion classes does not fit: the point is filed as failed, with the reason."""
    out = tmp_path / "failed.csv"
    options = [*TINY, "--num-classes", "1000000000", "--out", str(out)]
    assert cli.main(["train", "resnet50", *options]) == 0
    row = pd.read_csv(out).iloc[0]
    assert row["status"] == "failed" and row["reason"].startswith("out of memory: ")
    assert "can't allocate memory" in read_sidecar(out)["failed"]
    assert f"recorded as failed in {out}" in capsys.readouterr().err


def test_a_failing_rank_files_its_reason_for_the_launcher(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(failures.FAILURE_DIR, str(tmp_path))
    failures.file_failure("out of memory: CUDA out of memory", 1)
    time.sleep(0.05)
    failures.file_failure("DistBackendError: NCCL error: remote process exited", 0)
    # the first rank to fail caused the others' failures: its reason is the point's
    assert failures.first_failure(tmp_path) == "rank 1: out of memory: CUDA out of memory"
    assert failures.first_failure(tmp_path / "empty") is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["resnet18"], "invalid choice: 'resnet18'"),
        (["resnet50", "--batch-size", "0"], "argument --batch-size: must be 1 or more, got 0"),
        (["resnet50", "--gpus", "0,0"], "each listed once"),
        (["resnet50", "--gpus", "0,1", "--nproc", "3"], "--nproc 3 with --gpus 0,1: one process per GPU (2)"),
        (["resnet50", "--gpus", "cpu", "--until-stopped", "--out", "x.csv"], "writes no table"),
    ],
)
def test_bad_options_say_what_is_wrong(options: list[str], message: str, capsys) -> None:
    try:
        status = cli.main(["train", *options])
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(HAVE_GPU, reason="checks the message on a machine without a GPU")
def test_gpus_that_are_not_here_are_refused(capsys) -> None:
    assert cli.main(["train", "resnet50", "--gpus", "0,1", "--profile", "h100"]) == 2
    assert "cannot measure on GPU 0" in capsys.readouterr().err


def test_gpu_counts_are_limited_to_the_gpus_here() -> None:
    assert usable_gpu_counts([1, 2, 4, 8], 4) == ([1, 2, 4], [8])
    assert usable_gpu_counts([2, 1], None) == ([1, 2], [])  # cpu: processes
    with pytest.raises(GpureproError, match=r"\[2, 4\] all need more GPUs than the 1 selected here"):
        usable_gpu_counts([2, 4], 1)
    assert (
        workers_per_process(15, 4) == 3 and workers_per_process(2, 8) == 1 and workers_per_process(0, 2) == 0
    )


# A process tree like torchrun's: the child starts a worker in a session of its own that ignores
# SIGTERM, so neither the group signal nor the grace period stops it; only the final SIGKILL does.
TREE = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    worker = subprocess.Popen(
        [sys.executable, "-c",
         "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
        start_new_session=True,
    )
    print(worker.pid, flush=True)
    time.sleep(600)
    """
)


def _start_tree(grace_s: float):
    return background_process([sys.executable, "-c", TREE], grace_s, stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("body_raises", [False, True])
def test_background_process_leaves_nothing_behind(tmp_path: Path, body_raises: bool) -> None:
    pids: list[int] = []
    expected = pytest.raises(RuntimeError) if body_raises else contextlib.nullcontext()
    with expected, _start_tree(grace_s=0.5) as process:
        pids = [process.pid, int(process.stdout.readline())]
        assert all(psutil.pid_exists(p) for p in pids)
        if body_raises:
            raise RuntimeError("the measurement failed")
    assert process.returncode is not None
    assert gone_within(pids, 5), f"left behind: {[p for p in pids if running(p)]}"


def _noise_pid(stderr: str) -> int:
    match = re.search(r"noise: started pid (\d+)", stderr)
    assert match, stderr[-2000:]
    return int(match.group(1))


def test_sgemm_with_noise_records_it_and_stops_it(tmp_path: Path) -> None:
    out = tmp_path / "sgemm.csv"
    result = run_gpurepro(
        "sgemm", "64", "3", "cpu", "--profile", "cpu", "--idle-seconds", "0.1", "--energy-window-s", "0.1",
        "--cooldown-max-wait-s", "0", "--noise-workload", "resnet50", "--noise-gpus", "cpu",
        "--noise-args", "--image-size 32 --batch-size 2 --warmup 1 --log-interval 1", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    reps = pd.read_csv(out)
    assert set(reps["noise_workload"]) == {"resnet50"} and set(reps["noise_gpus"]) == {"cpu"}
    assert read_sidecar(out)["workload"]["noise_workload"] == "resnet50"
    assert "warmed up after" in result.stderr and "noise: stopped" in result.stderr
    assert gone_within([_noise_pid(result.stderr)], 5)


def test_noise_that_fails_to_start_in_time_is_stopped(capfd) -> None:
    settings = NoiseSettings("resnet50", "cpu", "--image-size 32 --batch-size 2", 0.5, "cpu")
    timeout = pytest.raises(GpureproError, match="did not finish its warm-up within 0.5 s")
    with timeout, noise_during(settings, "cpu"):
        pytest.fail("the block must not run without the noise")
    assert gone_within([_noise_pid(capfd.readouterr().err)], 5)


def test_noise_may_not_share_the_measured_gpu() -> None:
    settings = NoiseSettings("resnet50", "0,1", ready_timeout_s=1)
    measured_gpu = pytest.raises(GpureproError, match="includes GPU 1, the one being measured")
    with measured_gpu, noise_during(settings, 1):
        pass


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("gpus", ["0", "0,1"])
def test_gpu_training_with_the_profile_settings(gpus: str, tmp_path: Path) -> None:
    """The profile's batch, AMP and channels-last on one GPU, and DDP over NCCL on two where there are two."""
    if len(gpus.split(",")) > torch.cuda.device_count():
        pytest.skip(f"needs {len(gpus.split(','))} GPUs")
    out = tmp_path / "gpu.csv"
    result = run_gpurepro("train", "resnet50", "--gpus", gpus, "--device-check", "warn", "--iterations", "20",
                          "--warmup", "5", "--image-size", "224", "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = read_sidecar(out)["training"]
    assert summary["images_per_s"] > 0 and summary["world_size"] == len(gpus.split(","))
    assert summary["parameters_equal_across_ranks"]
