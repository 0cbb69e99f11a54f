"""Power above active idle at a point's median pace (inference/pace.py)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gpurepro import process_table
from gpurepro.inference import pace

KEYS = ["family", "model", "batch_size", "precision", "mode"]


def _process(model: str, run: int, inferences: float, energy_j: float, status: str = "ok") -> list[dict]:
    """One process's rows as inference/summary.py writes them: a 3 s energy window of `inferences`
    inferences, `energy_j` above active idle each."""
    keys = {"family": "bert", "model": model, "batch_size": 1, "precision": "fp16", "mode": "eager",
            "run": run, "status": status, "reason": ""}  # fmt: skip
    return [
        {**keys, "metric": metric, "statistic": statistic, "value": value, "unit": unit}
        for metric, statistic, value, unit in (
            ("energy_window", "value", 3.0, "s"),
            ("energy_window_inferences", "value", inferences, "runs"),
            ("energy_per_inference", "above_active_idle", energy_j, "J"),
            ("power_above_active_idle", "mean", energy_j * inferences / 3.0, "W"),
        )
    ]


def _table(*processes: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([row for process in processes for row in process])


def test_the_hosts_swing_between_processes_leaves_the_reading() -> None:
    """BERT-B s384 as one H100 ran it: 194 to 468 inferences a window, one energy per inference. Each
    process's own power swings 2.4x with its pace; at the point's median pace every process reads alike."""
    table = _table(
        _process("bert-b", 1, 194, 0.17), _process("bert-b", 2, 234, 0.17), _process("bert-b", 3, 468, 0.17)
    )
    rows = pace.rows_at_median_pace(table, KEYS)
    power = rows[rows["statistic"] == pace.STATISTIC]
    assert list(power["run"]) == [1, 2, 3]
    assert power["value"].tolist() == pytest.approx([0.17 * 234 / 3] * 3)
    rate = rows[rows["metric"] == "energy_window_rate"]["value"]
    assert rate.tolist() == pytest.approx([78.0] * 3)
    own = table[(table["metric"] == "power_above_active_idle")]["value"]
    assert own.max() / own.min() == pytest.approx(468 / 194)


def test_each_point_keeps_its_own_pace() -> None:
    """BERT-L runs twice BERT-B's layers, so about half its rate: at its own median pace its power above
    active idle is not its energy's 2.7x BERT-B's, and the across-process table reads the new rows."""
    table = _table(
        *(_process("bert-b", run, 440, 0.175) for run in (1, 2, 3)),
        *(_process("bert-l", run, 220, 0.47) for run in (1, 2, 3)),
    )
    study = pd.concat([table, pace.rows_at_median_pace(table, KEYS)], ignore_index=True)
    over = process_table.summarise(study, KEYS)
    medians = over[(over["per_process"] == pace.STATISTIC) & (over["statistic"] == "median")]
    by_model = dict(zip(medians["model"], medians["value"], strict=True))
    assert by_model["bert-b"] == pytest.approx(0.175 * 440 / 3)
    assert by_model["bert-l"] == pytest.approx(0.47 * 220 / 3)
    assert by_model["bert-l"] / by_model["bert-b"] == pytest.approx(0.47 / 0.175 / 2)


def test_a_failed_process_or_one_without_a_window_adds_nothing() -> None:
    """A failed process neither sets the pace nor gets a reading; a point without energy windows gets
    no rows at all."""
    table = _table(
        _process("deit-t", 1, 480, 0.02),
        _process("deit-t", 2, 600, 0.02),
        _process("deit-t", 3, 9999, 0.5, status="failed"),
    )
    rows = pace.rows_at_median_pace(table, KEYS)
    power = rows[rows["statistic"] == pace.STATISTIC]
    assert list(power["run"]) == [1, 2]
    assert power["value"].tolist() == pytest.approx([0.02 * 540 / 3] * 2)
    no_window = table[table["metric"] != "energy_window_inferences"]
    assert pace.rows_at_median_pace(no_window, KEYS).empty
    assert math.isnan(pace._rate(no_window[no_window["run"] == 1]))
