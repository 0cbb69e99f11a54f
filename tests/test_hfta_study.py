"""The HFTA throughput study on the CPU: one point per mode through the CLI (raw table, trace, sidecars),
concurrent really running B processes at once, every mode training the same models, mps skipped plainly
without its control binary, divergence and out-of-memory recorded rather than crashing, the tables
(normalised throughput, speedups) from points the CLI measured, the figure, and clear errors."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest

from gpurepro import cli, hfta
from gpurepro.datasets import tiny_imagenet
from gpurepro.hfta_study import OPTIMIZERS, WORKLOADS
from gpurepro.hfta_study.mps import MPS_CONTROL
from gpurepro.hfta_study.summary import normalise, speedups, summarise

from .conftest import GENEROUS_SKEW_S, path_without
from .dataset_archives import md5, tiny_imagenet_zip

FAST = ["--idle-seconds", "0.1", "--energy-window-s", "0.1", "--cooldown-max-wait-s", "0", "--rate-hz", "50"]
# A small MLP point: a few steps of batch 16, seconds per point on two cores.
MLP = [
    "--workload",
    "mlp",
    "--batch-size",
    "16",
    "--steps",
    "3",
    "--warmup",
    "1",
    "--gpu",
    "cpu",
    "--profile",
    "cpu",
]
# (mode, B) of the small sweep the tests share: serial and hfta at B = 1 and 2, concurrent at B = 2.
SWEEP = [("serial", 1), ("serial", 2), ("hfta", 1), ("hfta", 2), ("concurrent", 2)]


def _point(directory: Path, mode: str, b: int, *extra: str) -> tuple[int, Path]:
    out = directory / f"mlp_{mode}_b{b}.csv"
    argv = ["hfta", *MLP, "--mode", mode, "-B", str(b), *FAST, *extra]
    return cli.main([*argv, "--out", str(out), "--trace-out", str(out.with_suffix(".telemetry.csv"))]), out


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Path]:
    directory = tmp_path_factory.mktemp("hfta")
    points = {}
    for mode, b in SWEEP:
        status, out = _point(directory, mode, b)
        assert status == 0
        points[(mode, b)] = out
    return points


def test_names_match_the_fusion_library() -> None:
    assert WORKLOADS == hfta.WORKLOAD_NAMES and set(OPTIMIZERS) == set(hfta.OPTIMIZERS)


def test_each_mode_writes_a_raw_table_trace_and_sidecars(sweep: dict[tuple[str, int], Path]) -> None:
    for (mode, b), raw in sweep.items():
        rows = pd.read_csv(raw)
        assert set(rows["status"]) == {"ok"} and (rows["mode"] == mode).all() and (rows["b"] == b).all()
        # one row per unit: each serial model, each process, or the one fused array
        assert len(rows) == (1 if mode == "hfta" else b) and rows["models"].sum() == b
        assert (rows["samples"] == rows["models"] * 16 * 3).all() and (rows["warmup_steps"] == 1).all()
        assert (rows["throughput_samples_per_s"] > 0).all() and (rows["peak_memory_bytes"] > 0).all()
        sidecar = json.loads(raw.with_name(f"{raw.stem}.provenance.json").read_text())
        assert sidecar["workload"]["mode"] == mode and "measurement" in sidecar
        trace = raw.with_suffix(".telemetry.csv")
        assert len(pd.read_csv(trace)) and trace.with_name(f"{trace.stem}.provenance.json").is_file()


def test_throughput_is_samples_over_the_timed_window(sweep: dict[tuple[str, int], Path]) -> None:
    serial = pd.read_csv(sweep[("serial", 2)])
    spans = serial["t_end_unix_s"] - serial["t_start_unix_s"]
    # serial: the models' own timed stretches one after another, not the time between them
    assert serial["t_start_unix_s"].iloc[1] > serial["t_end_unix_s"].iloc[0]
    assert serial["wall_s"].iloc[0] == pytest.approx(spans.sum())
    concurrent = pd.read_csv(sweep[("concurrent", 2)])
    window = concurrent["t_end_unix_s"].max() - concurrent["t_start_unix_s"].min()
    assert concurrent["wall_s"].iloc[0] == pytest.approx(window)
    for rows in (serial, concurrent):
        assert rows["throughput_samples_per_s"].iloc[0] == pytest.approx(
            rows["samples"].sum() / rows["wall_s"].iloc[0]
        )


def test_concurrent_runs_b_processes_at_once(sweep: dict[tuple[str, int], Path]) -> None:
    rows = pd.read_csv(sweep[("concurrent", 2)])
    assert (
        rows["pid"].nunique() == 2 and os.getpid() not in set(rows["pid"]) and (rows["processes"] == 2).all()
    )
    # both leave the barrier together; a few steps of milliseconds each need not overlap on a busy host,
    # so their starts are held only to a generous bound (GENEROUS_SKEW_S), and the point's wall time is
    # the span from the first start to the last end (test_throughput_is_samples_over_the_timed_window)
    assert 0 <= rows["t_start_unix_s"].max() - rows["t_start_unix_s"].min() < GENEROUS_SKEW_S


def test_every_mode_trains_the_same_models(sweep: dict[tuple[str, int], Path]) -> None:
    """Model b has the same weights and batches in every mode: after the same steps the losses agree."""
    losses = {
        mode: pd.read_csv(sweep[(mode, 2)])["final_loss"].mean() for mode in ("serial", "hfta", "concurrent")
    }
    assert losses["hfta"] == pytest.approx(losses["serial"], rel=1e-4)
    assert losses["concurrent"] == pytest.approx(losses["serial"], rel=1e-4)
    one = pd.read_csv(sweep[("serial", 1)])["final_loss"].iloc[0]
    assert one == pytest.approx(pd.read_csv(sweep[("serial", 2)])["final_loss"].iloc[0], rel=1e-6)


def test_mps_is_skipped_plainly_without_the_control_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without([MPS_CONTROL], tmp_path / "bin"))  # hidden where installed
    status, out = _point(tmp_path, "mps", 2)
    assert status == 0
    rows = pd.read_csv(out)
    assert list(rows["status"]) == ["skipped"] and list(rows["reason"]) == [f"{MPS_CONTROL} not found"]
    assert "throughput_samples_per_s" not in rows  # no numbers at all
    assert (
        json.loads(out.with_name(f"{out.stem}.provenance.json").read_text())["skipped"]
        == f"{MPS_CONTROL} not found"
    )


def test_a_diverging_point_is_recorded_as_failed(tmp_path: Path) -> None:
    status, out = _point(tmp_path, "hfta", 2, "--lr", "1e30")
    assert status == 0
    rows = pd.read_csv(out)
    assert list(rows["status"]) == ["failed"] and "training diverged: loss nan" in rows["reason"].iloc[0]
    assert pd.read_csv(out.with_suffix(".telemetry.csv")).empty
    # nowhere to record it: the command says so and fails
    assert cli.main(["hfta", *MLP, "--mode", "serial", "-B", "1", "--lr", "1e30", *FAST]) == 1


def test_out_of_memory_in_a_process_marks_the_point_oom(tmp_path: Path) -> None:
    # 10^12 samples of 784 floats is 3 PB, beyond any address space: every process fails to allocate
    # its batches at once, even where the kernel overcommits memory (3 TB would be mapped, then killed).
    status, out = _point(tmp_path, "concurrent", 2, "--batch-size", str(10**12))
    assert status == 0
    rows = pd.read_csv(out)
    assert list(rows["status"]) == ["oom"] and "out of memory" in rows["reason"].iloc[0]
    assert rows["reason"].iloc[0].startswith("process ")  # which process, of how many


def test_tables_normalise_over_serial_fp32_and_summarise_speedups(
    sweep: dict[tuple[str, int], Path], tmp_path: Path
) -> None:
    failed, diverged = _point(tmp_path, "hfta", 3, "--lr", "1e30")
    assert failed == 0
    table = summarise([*map(str, sweep.values()), str(diverged)])
    throughput = table[table["metric"] == "throughput"].set_index(["mode", "b"])["value"]
    normalised = table[table["metric"] == "normalised_throughput"].set_index(["mode", "b"])["value"]
    for mode, b in SWEEP:
        assert normalised[(mode, b)] == pytest.approx(throughput[(mode, b)] / throughput[("serial", b)])
    assert math.isnan(throughput[("hfta", 3)]) and math.isnan(normalised[("hfta", 3)])
    assert table[(table["b"] == 3)]["status"].eq("failed").all()

    summary = speedups(table)
    speedup = summary[summary["metric"] == "speedup"].set_index(["baseline", "statistic"])["value"]
    fused_best = max(throughput[("hfta", 1)], throughput[("hfta", 2)])
    serial_best = max(throughput[("serial", 1)], throughput[("serial", 2)])
    assert speedup[("serial", "max")] == pytest.approx(fused_best / serial_best)
    assert speedup[("concurrent", "max")] == pytest.approx(fused_best / throughput[("concurrent", 2)])
    fitting = summary[summary["metric"] == "largest_b_fitting"].set_index("mode")["value"]
    assert fitting["hfta"] == 2 and fitting["serial"] == 2  # B=3 diverged: 2 is the largest that ran

    out, summary_out, png = tmp_path / "hfta.csv", tmp_path / "hfta_speedup.csv", tmp_path / "hfta.png"
    argv = ["aggregate", "hfta", *map(str, sweep.values()), "--out", str(out), "--summary", str(summary_out)]
    assert cli.main(argv) == 0
    assert set(pd.read_csv(summary_out)["metric"]) == {"peak_throughput", "largest_b_fitting", "speedup"}
    assert cli.main(["plot", "hfta", str(out), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_stock_and_graphed_steps_are_compared_side_by_side(sweep: dict[tuple[str, int], Path]) -> None:
    """Graphed points (made here from the stock ones: graphs need CUDA) go beside the stock ones: every
    fused step against every baseline step, normalised over the stock serial point alone."""
    stock = summarise([str(p) for p in sweep.values()])
    assert set(stock["step"]) == {"stock"}  # the CLI records the step it ran
    graphed = stock[stock["metric"] == "throughput"].assign(step="graphed")
    graphed["value"] = graphed["value"] * graphed["mode"].map(lambda mode: 3.0 if mode == "hfta" else 2.0)
    both = pd.concat([stock[stock["metric"] == "throughput"], graphed], ignore_index=True)
    both = pd.concat([both, normalise(both)], ignore_index=True)
    throughput = both[both["metric"] == "throughput"].set_index(["mode", "step", "b"])["value"]
    normalised = both[both["metric"] == "normalised_throughput"].set_index(["mode", "step", "b"])["value"]
    assert normalised[("serial", "graphed", 2)] == pytest.approx(2.0)  # over stock serial, not graphed

    summary = speedups(both)
    rows = summary[(summary["metric"] == "speedup") & (summary["statistic"] == "max")]
    speedup = rows.set_index(["step", "baseline", "baseline_step"])["value"]
    assert len(speedup) == 2 * 2 * 2  # fused stock|graphed over serial and concurrent, stock|graphed
    fused = {step: max(throughput[("hfta", step, b)] for b in (1, 2)) for step in ("stock", "graphed")}
    serial = {step: max(throughput[("serial", step, b)] for b in (1, 2)) for step in ("stock", "graphed")}
    for step, baseline_step in [("stock", "stock"), ("graphed", "stock"), ("graphed", "graphed")]:
        expected = fused[step] / serial[baseline_step]
        assert speedup[(step, "serial", baseline_step)] == pytest.approx(expected)
    assert speedup[("graphed", "serial", "graphed")] == pytest.approx(
        1.5 * speedup[("stock", "serial", "stock")]
    )
    peaks = summary[summary["metric"] == "peak_throughput"].set_index(["mode", "step"])["value"]
    assert peaks[("hfta", "graphed")] == pytest.approx(3.0 * peaks[("hfta", "stock")])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mode", "serial", "-B", "1", "--lr", "0"], "--lr must be a positive number, got 0.0"),
        (
            ["--mode", "hfta", "-B", "2", "--precision", "fp16"],
            "precision fp16 is not supported by profile 'cpu'",
        ),
        (
            ["--mode", "serial", "-B", "1", "--data-source", "tiny-imagenet"],
            "--data-source tiny-imagenet feeds resnet18 only; mlp trains on synthetic data",
        ),
        (
            ["--mode", "serial", "-B", "1", "--data-root", "data"],
            "--data-root is for --data-source tiny-imagenet",
        ),
    ],
)
def test_bad_options_say_what_is_wrong(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["hfta", *MLP, *argv, *FAST]) == 2
    assert message in capsys.readouterr().err


def test_bad_b_and_mode_are_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["hfta", *MLP, "--mode", "serial", "-B", "0"])
    assert "-B/--models: must be 1 or more, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["hfta", *MLP, "--mode", "fused", "-B", "1"])
    assert "invalid choice: 'fused'" in capsys.readouterr().err


def test_resnet18_trains_on_real_tiny_imagenet_batches(tmp_path: Path) -> None:
    archive = tmp_path / "tiny-imagenet-200.zip"
    archive.write_bytes(tiny_imagenet_zip(train_per_class=2, val_per_class=1))
    root = tmp_path / "tiny-imagenet-200"
    tiny_imagenet.prepare(archive, root, md5(archive.read_bytes()))
    out = tmp_path / "real.csv"
    argv = [
        "hfta",
        "--workload",
        "resnet18",
        "--mode",
        "hfta",
        "-B",
        "2",
        "--batch-size",
        "4",
        "--steps",
        "1",
    ]
    argv += [
        "--warmup",
        "0",
        "--data-batches",
        "2",
        "--data-source",
        "tiny-imagenet",
        "--data-root",
        str(root),
    ]
    assert cli.main([*argv, "--gpu", "cpu", "--profile", "cpu", *FAST, "--out", str(out)]) == 0
    rows = pd.read_csv(out)
    assert list(rows["status"]) == ["ok"] and rows["image_size"].item() == 64
    assert rows["data"].item().startswith("tiny-imagenet: 2 real Tiny-ImageNet batches per model")


def test_graphs_are_on_where_cuda_is_and_refused_on_the_cpu() -> None:
    from gpurepro.hfta_study.graphs import use_graphs

    assert use_graphs("auto", "cpu") is False and use_graphs("off", "cuda:0") is False
    assert use_graphs("auto", "cuda:0") is True and use_graphs("on", "cuda:1") is True
    with pytest.raises(ValueError, match="needs a CUDA device, not cpu"):
        use_graphs("on", "cpu")
    with pytest.raises(ValueError, match="one of auto, on, off, got 'yes'"):
        use_graphs("yes", "cpu")


def test_the_graphed_steps_sgd_matches_the_default_even_after_a_skipped_first_step() -> None:
    """fp16's first steps often overflow and the scaler skips them; the fused SGD of graphed steps must
    then still update as torch's default SGD does (its momentum buffers start at zero, not unset)."""
    import torch

    from gpurepro.hfta_study import training

    def run(graphs: bool) -> torch.Tensor:
        settings = training.TrainSettings("mlp", 4, "fp32", 1, 0, "sgd", 0.1, 0, "cpu", graphs=graphs)
        weight = torch.nn.Parameter(torch.ones(4))
        optimizer = training._optimizer(iter([weight]), settings)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**4)
        for gradient in [float("inf"), 1.0, -2.0, 0.5]:  # the first step overflows and is skipped
            optimizer.zero_grad()
            loss = (weight * gradient).sum()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return weight.detach()

    assert torch.equal(run(False), torch.ones(4) - 0.1 * (1.0 + (0.9 - 2.0) + (0.9 * -1.1 + 0.5)))
    assert torch.allclose(run(True), run(False), atol=1e-6)


def test_points_at_a_b_serial_did_not_run_are_normalised_over_serial_at_its_b(
    sweep: dict[tuple[str, int], Path],
) -> None:
    """The sweep measures serial at its smallest B only (its rate is one model's at any B): the other B
    values are normalised over that serial point of the same repeat."""
    table = summarise([str(p) for p in sweep.values()])
    rates = table[table["metric"] == "throughput"]
    only_b1 = rates[~((rates["mode"] == "serial") & (rates["b"] != 1))]
    normalised = normalise(only_b1).set_index(["mode", "b"])["value"]
    rate = rates.set_index(["mode", "b"])["value"]
    assert normalised[("concurrent", 2)] == pytest.approx(rate[("concurrent", 2)] / rate[("serial", 1)])
