"""How an HFTA point is timed, on the CPU: every unit trains at least `min_timed_s` after its warm-up
(more steps than asked where the time needs them, and says how many), drops its first steps after the
warm-up, and a compiled step trains the same models as the stock one; the tables report the steps and
the timed window, read energy only over windows long enough for it, and order the compiled step beside
stock and graphed."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from gpurepro import cli
from gpurepro.hfta_study import summary, training

SETTINGS = training.TrainSettings("mlp", 8, "fp32", steps=2, warmup=1, optimizer="sgd", lr=0.01, seed=0,
                                  device="cpu", data_batches=2)  # fmt: skip


def test_a_unit_trains_for_at_least_its_minimum_time() -> None:
    timed = training.train_fused(
        training.TrainSettings(**{**SETTINGS.__dict__, "min_timed_s": 0.6, "dropped_steps": 2}), 2
    )
    # how many steps fill 0.6 s is the host's (a loaded host ran only the 2 asked): the next test counts
    assert timed.t_end_unix_s - timed.t_start_unix_s >= 0.6 and timed.steps >= SETTINGS.steps
    assert timed.samples == 2 * 8 * timed.steps
    assert (timed.dropped_steps, timed.min_timed_s) == (2, 0.6)
    row = timed.row()
    assert row["steps"] == timed.steps and row["ms"] >= 600
    quick = training.train_fused(SETTINGS, 2)  # no minimum: exactly the steps asked for
    assert quick.steps == 2 and quick.dropped_steps == 0


def test_steps_go_on_past_those_asked_until_the_minimum_time_has_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rule as a count, on a host clock that reads 0.25 s later at each reading: the window starts
    at 0 s and the 2 steps asked run; the clock then reads 0.25 s and 0.5 s, under the 0.6 s minimum, so
    two more steps run, and 0.75 s ends them. The window's end is the next reading, 1.0 s."""
    readings = iter(0.25 * i for i in range(100))
    monkeypatch.setattr(training, "time", SimpleNamespace(time=lambda: next(readings)))
    timed = training.train_fused(training.TrainSettings(**{**SETTINGS.__dict__, "min_timed_s": 0.6}), 2)
    assert timed.steps == 4 and timed.samples == 2 * 8 * 4
    assert (timed.t_start_unix_s, timed.t_end_unix_s) == (0.0, 1.0)  # the end is read after the last step


def test_a_compiled_step_trains_the_same_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """One eager step, then the compiled module (here through aot_eager, which traces as inductor does
    without generating code): the same losses as stock steps after the same steps."""
    compiles, original = [], torch.compile

    def compile_(module: torch.nn.Module) -> torch.nn.Module:
        compiles.append(module)
        return original(module, backend="aot_eager", fullgraph=True)

    monkeypatch.setattr(training.torch, "compile", compile_)
    warm = {**SETTINGS.__dict__, "warmup": 2}  # the eager step and the compiling one
    stock = training.train_fused(training.TrainSettings(**warm), 2)
    compiled = training.train_fused(training.TrainSettings(**{**warm, "compiled": True}), 2)
    assert len(compiles) == 1 and compiled.warmup_steps == stock.warmup_steps == 2
    assert compiled.final_loss == pytest.approx(stock.final_loss, rel=1e-5)
    single = training.train_single(training.TrainSettings(**{**SETTINGS.__dict__, "compiled": True}), 0)
    assert len(compiles) == 2 and math.isfinite(single.final_loss)


def _rows(mode: str, spans: list[tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        {"mode": mode, "samples": 100, "t_start_unix_s": [s for s, _ in spans],
         "t_end_unix_s": [e for _, e in spans], "energy_j": 50.0, "steps": 10}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "spans", "window", "minimum", "expected"),
    [
        ("hfta", [(0.0, 4.0)], {"energy_j": 400.0, "reliable": True}, 3.0, 4.0),
        ("hfta", [(0.0, 2.0)], {"energy_j": 400.0, "reliable": True}, 3.0, math.nan),  # too short
        ("hfta", [(0.0, 2.0)], {"energy_j": 400.0, "reliable": False}, None, math.nan),  # harness said so
        ("serial", [(0.0, 3.5), (5.0, 8.5)], None, 3.0, 0.5),  # each model's own stretch, summed
        ("serial", [(0.0, 3.5), (5.0, 7.0)], None, 3.0, math.nan),  # one stretch too short
    ],
)
def test_energy_is_read_only_over_windows_long_enough(
    mode: str, spans: list, window: dict | None, minimum: float | None, expected: float
) -> None:
    sidecar = {"workload": {} if minimum is None else {"min_energy_window_s": minimum},
               "measurement": {"energy": {"gpu0": window}}}  # fmt: skip
    value = summary._energy_per_sample(_rows(mode, spans), sidecar, "gpu0")
    assert value == pytest.approx(expected, nan_ok=True)


def test_tables_report_steps_and_the_timed_window_and_compiled_steps(tmp_path: Path) -> None:
    out = tmp_path / "mlp_hfta_b2.csv"
    argv = ["hfta", "--workload", "mlp", "--mode", "hfta", "-B", "2", "--batch-size", "8", "--steps", "3",
            "--warmup", "1", "--gpu", "cpu", "--profile", "cpu", "--idle-seconds", "0.1",
            "--energy-window-s", "0.1", "--cooldown-max-wait-s", "0", "--out", str(out)]  # fmt: skip
    assert cli.main(argv) == 0
    table = summary.summarise([str(out)])
    values = table.set_index("metric")["value"]
    raw = pd.read_csv(out)
    assert values["timed_steps"] == 3
    assert values["timed_window"] == pytest.approx(
        float(raw["t_end_unix_s"].max() - raw["t_start_unix_s"].min())
    )
    throughput = table[table["metric"] == "throughput"]
    compiled = throughput.assign(step="compiled", value=throughput["value"] * 2)
    both = summary._order(pd.concat([compiled, throughput], ignore_index=True))
    assert list(both["step"]) == ["stock", "compiled"]
    peaks = summary.speedups(both)
    peaks = peaks[peaks["metric"] == "peak_throughput"].set_index("step")["value"]
    assert peaks["compiled"] == pytest.approx(2 * peaks["stock"])
    assert summary.step_order(["compiled", "stock", "mine", "graphed"]) == [
        "stock",
        "graphed",
        "compiled",
        "mine",
    ]
