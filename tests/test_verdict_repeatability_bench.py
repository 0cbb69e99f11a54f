"""benchmarks/verdict_repeatability.py: its redraw of a run's processes, and the script on made tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# benchmarks/ is no package: the script is imported from beside it
sys.path.insert(0, str(BENCHMARKS))

import verdict_repeatability  # noqa: E402

H100 = "NVIDIA H100 80GB HBM3"


def _deit(energies: dict[str, list[float]], failed: tuple[str, int] | None = None) -> pd.DataFrame:
    """A DeiT study table: each model's processes at 150 inferences a second, their energy per inference
    above active idle and their power at the point's median pace; one process failed where named."""
    rows = []
    for model, values in energies.items():
        for run, joules in enumerate(values, start=1):
            status = "failed" if failed == (model, run) else "ok"
            keys = {"study": "inference", "profile": "h100", "device": "0", "gpu_name": H100,
                    "family": "deit", "model": model, "seq_len": np.nan, "batch_size": 1, "precision": "fp16",
                    "mode": "eager", "cast_protocol": "region_cached", "run": run, "status": status,
                    "reason": ""}  # fmt: skip
            rows += [
                {**keys, "metric": "energy_per_inference", "statistic": "above_active_idle", "value": joules,
                 "unit": "J"},
                {**keys, "metric": "power_above_active_idle", "statistic": "at_median_pace",
                 "value": joules * 150, "unit": "W"},
            ]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_redraw_keeps_every_point_and_draws_its_processes_from_its_own() -> None:
    table = _deit({"deit-t": [0.02, 0.021, 0.022], "deit-b": [0.12, 0.121]}, failed=("deit-b", 2))
    again = verdict_repeatability.redraw(table, np.random.default_rng(1), None)
    for model, own in (("deit-t", {0.02, 0.021, 0.022}), ("deit-b", {0.12})):
        energy = again[(again["model"] == model) & (again["metric"] == "energy_per_inference")]
        assert set(energy["value"]) <= own  # its own processes' values only, the failed one left out
        assert sorted(energy["run"]) == list(range(1, len(energy) + 1))
    five = verdict_repeatability.redraw(table, np.random.default_rng(1), 5)
    assert (five[five["metric"] == "energy_per_inference"].groupby("model")["run"].nunique() == 5).all()


def test_the_script_reads_a_clear_order_the_same_in_every_redraw(tmp_path: Path) -> None:
    """DeiT-T, -S and -B far apart in every process: the order held in the run and in every redraw (a
    run without BERT points has no BERT table to redraw)."""
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    _deit({"deit-t": [0.020, 0.021, 0.022], "deit-s": [0.050, 0.049, 0.051], "deit-b": [0.12, 0.121, 0.119]}
          ).to_csv(tables / "inference_deit.csv", index=False)  # fmt: skip
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "verdict_repeatability.py"), str(tmp_path / "results"),
         "--resamples", "5", "--claims", "deit-power-order"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(row for row in result.stdout.splitlines() if "deit-power-order" in row)
    assert line.split()[2] == "held" and line.endswith("held 100%")
