"""The inference study on the CPU: the real architectures (parameter counts), forwards that never wait on
the host (CUDA graph capture needs that), modes that agree with eager, Timer blocks with wall-clock
bounds, the CLI writing raw + trace + sidecars (or a failed point with its reason), the tidy table and
the figures, and clear errors for bad arguments."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from gpurepro import cli, inference
from gpurepro.inference import measure, models, modes
from gpurepro.inference.summary import summarise
from gpurepro.point_failure import PointFailed

from .conftest import run_gpurepro

FAST = [
    *("--idle-seconds", "0.2", "--active-idle-seconds", "0.3", "--energy-window-s", "0.3"),
    *("--cooldown-max-wait-s", "0", "--rate-hz", "100"),
]
TIMING = ["--min-run-time", "0.2", "--warmup", "1"]

# Parameter counts of the published architectures: DeiT paper table 1 (5.7M, 22M, 86M) and BERT
# (110M, 340M) as timm's and transformers' own modules count them, classifier heads included.
PARAMETERS = {
    "deit-t": 5_717_416,
    "deit-s": 22_050_664,
    "deit-b": 86_567_656,
    "bert-b": 109_483_778,
    "bert-l": 335_143_938,
}


@pytest.mark.parametrize("name", list(models.VIT_MODELS))
def test_deit_models_are_the_real_architectures(name: str) -> None:
    model = models.build_vit(name, batch_size=2, device="meta")
    assert model.parameters == PARAMETERS[name]
    assert model.library.startswith("timm ") and model.architecture == models.VIT_MODELS[name]
    # On the meta device any host synchronisation (.item(), data-dependent branches) would raise:
    # the forward can be captured into a CUDA graph.
    assert model.forward(model.example).shape == (2, 1000)


@pytest.mark.parametrize("name", list(models.BERT_MODELS))
def test_bert_models_are_the_real_architectures(name: str) -> None:
    model = models.build_bert(name, batch_size=2, seq_len=16, device="meta")
    assert model.parameters == PARAMETERS[name]
    config = models.bert_config(name)
    size = models.BERT_MODELS[name]
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (
        size.hidden,
        size.layers,
        size.heads,
    )
    assert model.forward(model.example).shape == (2, models.BERT_LABELS)


def test_weights_and_inputs_are_seeded() -> None:
    a, b = models.build_vit("deit-t", 1, "cpu", seed=1), models.build_vit("deit-t", 1, "cpu", seed=1)
    c = models.build_vit("deit-t", 1, "cpu", seed=2)
    with torch.no_grad():
        assert torch.equal(a.forward(a.example), b.forward(b.example))
        assert not torch.equal(a.forward(a.example), c.forward(c.example))


def test_bad_model_and_sequence_length_say_what_is_allowed() -> None:
    with pytest.raises(Exception, match="unknown BERT model 'bert-x'; known: bert-b, bert-l"):
        models.build_bert("bert-x", 1, 8, "meta")
    with pytest.raises(Exception, match="sequence length 513 is outside BERT's 1..512 positions"):
        models.build_bert("bert-b", 1, 513, "meta")


def _tiny() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4)
    )
    return net.eval(), torch.randn(3, 16)


def test_compiled_output_agrees_with_eager() -> None:
    # TorchInductor on a small network (seconds); compiling DeiT itself on the CPU takes about a minute,
    # so the real models are compiled on the GPU (benchmarks/inference_modes.py checks their outputs).
    net, x = _tiny()
    eager = modes.build_runner(net, x, "eager", "fp32")()
    compiled = modes.build_runner(net, x, "compile", "fp32", warmup=1)()
    assert torch.allclose(eager, compiled, rtol=1e-5, atol=1e-5)


def test_compiler_and_capture_failures_are_failed_points(monkeypatch: pytest.MonkeyPatch) -> None:
    net, x = _tiny()
    with pytest.raises(PointFailed, match="needs a GPU"):
        modes.build_runner(net, x, "cudagraph", "fp32")

    def broken_compile(fn, **_kwargs):
        def run(*_args):
            raise RuntimeError("inductor: no C++ compiler found\nmore detail")

        return run

    monkeypatch.setattr(torch, "compile", broken_compile)
    with pytest.raises(PointFailed, match="torch.compile failed: RuntimeError: inductor: no C"):
        modes.build_runner(net, x, "compile", "fp32")


def test_autocast_only_for_fp16_and_bf16() -> None:
    net, x = _tiny()
    assert modes.with_precision(net, "fp32", "cpu") is net
    out = modes.build_runner(net, x, "eager", "bf16")()
    assert out.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="precision must be one of"):
        modes.with_precision(net, "int8", "cpu")


def test_blocks_carry_the_timers_numbers_and_wall_clock_bounds() -> None:
    blocks, m = measure.time_blocked(lambda: time.sleep(0.002), lambda: None, min_run_time=0.2)
    assert len(blocks) == len(m.times) >= 2
    assert blocks["ms"].tolist() == pytest.approx([t * 1e3 for t in m.times])
    assert blocks["ms"].median() == pytest.approx(m.median * 1e3)
    assert (blocks["runs"] == m.number_per_run).all() and blocks["ms"].min() >= 2.0
    span = blocks["t_end_unix_s"] - blocks["t_start_unix_s"]
    assert span.tolist() == pytest.approx((blocks["ms"] * blocks["runs"] / 1e3).tolist(), rel=0.05, abs=2e-3)
    assert (blocks["t_start_unix_s"].iloc[1:].to_numpy() >= blocks["t_end_unix_s"].iloc[:-1].to_numpy()).all()
    assert "measurements" in measure.describe_measurement(m)


def test_cli_writes_raw_trace_and_provenance_then_table_and_plot(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    out, trace = raw / "bert-b_s8.csv", raw / "bert-b_s8.telemetry.csv"
    args = [
        "infer",
        "bert",
        "-m",
        "bert-b",
        "-s",
        "8",
        "--gpu",
        "cpu",
        *TIMING,
        *FAST,
        "--config-hash",
        "abc",
    ]
    result = run_gpurepro(*args, "--out", str(out), "--trace-out", str(trace))
    assert result.returncode == 0, result.stderr
    assert "measurements" in result.stderr and "109.5 M parameters" in result.stderr
    blocks = pd.read_csv(out)
    assert len(blocks) >= 1 and set(blocks["status"]) == {"ok"}
    assert {"model", "seq_len", "batch_size", "precision", "mode", "ms", "runs", "power_w_median"} <= set(
        blocks
    )
    assert set(blocks["precision"]) == {"fp32"} and set(blocks["mode"]) == {"eager"}  # cpu profile default
    assert set(blocks["cast_protocol"]) == {"none"}  # fp32 casts nothing
    assert {"idle", "active_idle"} <= set(pd.read_csv(trace)["phase"])
    meta = json.loads((raw / "bert-b_s8.provenance.json").read_text())
    assert meta["profile"] == "cpu" and meta["config_hash"] == "abc"
    assert meta["workload"]["model"] == "bert-b" and meta["workload"]["seq_len"] == 8
    assert meta["workload"]["cast_protocol"] == "none"
    active = meta["measurement"]["active_idle"]["cpu"]
    # its 0.3 s, less at most what its edges' stamps shave off; under 5 s is generous, as in
    # test_active_idle.py, for a sleep that a busy host wakes late from
    assert 0.25 <= active["seconds"] < 5.0 and active["method"] in {
        "rapl",
        "median_of_samples",
    }
    assert {"idle", "active_idle"} <= set(meta["measurement"]["window_medians"]["cpu"])
    assert (raw / "bert-b_s8.telemetry.provenance.json").is_file()

    again = run_gpurepro(*args, "--out", str(out))
    assert again.returncode == 2 and "never overwritten" in again.stderr

    table = summarise([str(out)])
    latency = table[(table["metric"] == "latency") & (table["statistic"] == "median")]
    assert latency["value"].item() == pytest.approx(blocks["ms"].median())
    assert latency["unit"].item() == "ms" and latency["seq_len"].item() == 8
    count = table[(table["metric"] == "latency") & (table["statistic"] == "count")]
    assert count["value"].item() == len(blocks)
    assert {"energy_per_inference", "idle_power", "clock_event_reasons_energy_window"} <= set(table["metric"])
    assert {"active_idle_power", "power_above_active_idle", "sm_clock", "gpu_utilization"} <= set(
        table["metric"]
    )
    assert set(table["cast_protocol"]) == {"none"}
    png = tmp_path / "bert.png"
    assert cli.main(["plot", "bert", _write(table, tmp_path / "t.csv"), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def _write(table: pd.DataFrame, path: Path) -> str:
    table.to_csv(path, index=False)
    return str(path)


def test_a_failed_point_is_recorded_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(*_args, **_kwargs):
        raise PointFailed("torch.compile failed: BackendCompilerFailed: out of registers")

    monkeypatch.setattr(measure, "inference_workload", failing)
    out, trace = tmp_path / "deit-t.csv", tmp_path / "deit-t.telemetry.csv"
    argv = ["infer", "vit", "-m", "deit-t", "--mode", "compile", "--gpu", "cpu", *FAST]
    assert cli.main([*argv, "--out", str(out), "--trace-out", str(trace)]) == 0
    assert "point failed: compile: torch.compile failed" in capsys.readouterr().err
    row = pd.read_csv(out)
    assert len(row) == 1 and row["status"].item() == "failed"
    assert row["reason"].item() == "compile: torch.compile failed: BackendCompilerFailed: out of registers"
    assert pd.read_csv(trace).empty
    assert json.loads((tmp_path / "deit-t.provenance.json").read_text())["failed"].startswith("compile:")
    assert cli.main([*argv]) == 1  # nowhere to record it: the command fails

    table = summarise([str(out)])
    assert table["status"].tolist() == ["failed"] and math.isnan(table["value"].item())


def _fake_point(
    folder: Path, model: str, mode: str, precision: str, batch: int, ms: float, joules: float
) -> str:
    """A raw file as a GPU job writes it (blocks, sidecar with idle and energy window, trace)."""
    stem = folder / f"{model}_b{batch}_{precision}_{mode}"
    blocks = pd.DataFrame(
        {
            "profile": "h100", "device": "0", "family": "deit", "model": model, "batch_size": batch,
            "precision": precision, "mode": mode, "run": 1, "block": range(5), "runs": 100,
            "ms": [ms * f for f in (0.99, 1.0, 1.0, 1.01, 1.02)], "parameters": 1,
            "output_max_abs_diff_vs_eager": 0.0, "status": "ok", "reason": "", "power_w_median": 300.0,
            "throttled": False, "clock_event_names": "",
        }
    )  # fmt: skip
    blocks.to_csv(f"{stem}.csv", index=False)
    energy = {
        "duration_s": 10.0, "operations": 1000, "reliable": True, "avg_power_w": 300.0,
        "method": "nvml_energy_counter", "energy_per_op_j": joules, "energy_per_op_above_idle_j": joules / 2,
    }  # fmt: skip
    sidecar = {
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-x"}],
        "measurement": {"idle": {"0": {"power_w": 70.0}}, "energy": {"0": energy}, "telemetry": {}},
    }
    Path(f"{stem}.provenance.json").write_text(json.dumps(sidecar))
    pd.DataFrame(
        {
            "time_unix_s": [1.0, 2.0],
            "device": [0, 0],
            "phase": ["energy", "energy"],
            "clock_event_reasons": [0, 4],
        }
    ).to_csv(f"{stem}.telemetry.csv", index=False)
    return f"{stem}.csv"


def test_table_and_figure_of_a_gpu_sweep(tmp_path: Path) -> None:
    paths = [
        _fake_point(
            tmp_path, model, mode, precision, batch, base * speed * batch**0.5, 0.3 * base * batch**0.5
        )
        for model, base in (("deit-t", 1.0), ("deit-b", 4.0))
        for mode, speed in (("eager", 1.0), ("compile", 0.6), ("cudagraph", 0.4))
        for precision in ("fp32", "fp16")
        for batch in (1, 8)
    ]
    table = summarise(paths)
    assert table["mode"].drop_duplicates().tolist() == ["eager", "compile", "cudagraph"]
    energy = table[(table["metric"] == "energy_per_inference") & (table["statistic"] == "gross")]
    assert len(energy) == len(paths) and set(table["energy_method"]) == {"nvml_energy_counter"}
    per_sample = table[(table["metric"] == "energy_per_sample") & (table["statistic"] == "above_idle")]
    b8 = per_sample[per_sample["batch_size"] == 8]
    assert (b8["value"].to_numpy() > 0).all()
    above_idle = table[table["metric"] == "power_above_idle"]  # the energy window's 300 W less 70 W idle
    assert len(above_idle) == len(paths) and set(above_idle["value"]) == {230.0}
    reasons = table[table["metric"] == "clock_event_reasons_energy_window"]
    assert set(reasons["value"]) == {1.0} and set(reasons["unit"]) == {"sw_power_cap"}
    throttled = table[table["metric"] == "throttled_samples_energy_window"]
    assert set(throttled["value"]) == {0.5}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vit", "-m", "deit-t", "--precision", "fp16"], "precision fp16 is not supported by profile 'cpu'"),
        (
            ["vit", "-m", "deit-t", "--mode", "cudagraph"],
            "--mode cudagraph replays a CUDA graph and needs a GPU",
        ),
        (["bert", "-m", "bert-b", "-s", "600"], "--seq-len 600 is longer than BERT's 512 positions"),
        (["vit", "-m", "deit-t", "--profile", "h100"], "profile 'h100' measures a GPU"),
        (["vit", "-m", "deit-t", "--min-run-time", "0"], "--min-run-time must be positive"),
    ],
)
def test_bad_arguments_say_what_is_wrong(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["infer", *argv, "--gpu", "cpu", *FAST]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vit", "-m", "deit-x"], "invalid choice: 'deit-x'"),
        (["bert", "-m", "bert-b", "-b", "0"], "must be 1 or more"),
        (["vit", "-m", "deit-t", "--precision", "int8"], "invalid choice: 'int8'"),
        (["vit", "-m", "deit-t", "--mode", "tensorrt"], "invalid choice: 'tensorrt'"),
    ],
)
def test_bad_choices_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["infer", *argv])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_a_profiles_timing_overrides_the_configs_and_the_window_keeps_its_floor() -> None:
    config = {
        "inference": {"min_run_time_s": 5, "energy_window_s": 10, "warmup": 10},
        "telemetry": {"min_energy_window_s": 3},
    }
    assert inference.timing({}, config) == {"min_run_time_s": 5.0, "energy_window_s": 10.0}
    assert inference.timing({"min_run_time_s": 3, "energy_window_s": 5}, config) == {
        "min_run_time_s": 3.0,
        "energy_window_s": 5.0,
    }
    # a window shorter than NVML's counter is trusted over is raised to that floor
    assert inference.timing({"energy_window_s": 1}, config)["energy_window_s"] == 3.0
