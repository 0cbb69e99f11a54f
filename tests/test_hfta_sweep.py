"""Which points an HFTA sweep plans (gpurepro/hfta_study/sweep.py)."""

from __future__ import annotations

from gpurepro.hfta_study import sweep

AXES = {
    "step": ["stock", "graphed"],
    "scheme": ["serial", "concurrent", "mps", "hfta"],
    "b": [8, 32],
    "run": [1, 2],
}


def _planned(serial_b: list[int]) -> set[tuple[str, str, int, int]]:
    return {(p["step"], p["scheme"], p["b"], p["run"]) for p in sweep.points(AXES, serial_b)}


def test_serial_runs_at_its_own_b_values_only() -> None:
    planned = _planned([8])
    assert {(s, b) for _, s, b, _ in planned if s == "serial"} == {("serial", 8)}
    assert ("stock", "hfta", 32, 2) in planned


def test_serial_may_add_a_b_the_other_modes_do_not_run() -> None:
    planned = _planned([1])
    assert {b for _, s, b, _ in planned if s == "serial"} == {1}
    assert {b for _, s, b, _ in planned if s != "serial"} == {8, 32}


def test_steps_other_than_stock_run_once() -> None:
    assert {run for step, *_, run in _planned([8]) if step == "graphed"} == {1}
    assert {run for step, *_, run in _planned([8]) if step == "stock"} == {1, 2}


def test_concurrent_and_mps_leave_out_b1_where_serial_measures_it() -> None:
    axes = {**AXES, "b": [1, 8]}
    planned = {(p["scheme"], p["b"]) for p in sweep.points(axes, [1])}
    assert ("concurrent", 1) not in planned and ("mps", 1) not in planned
    assert ("hfta", 1) in planned and ("serial", 1) in planned
    planned = {(p["scheme"], p["b"]) for p in sweep.points(axes, [8])}
    assert ("concurrent", 1) in planned and ("serial", 1) not in planned


def test_the_speedup_at_the_fused_best_b_stands_serial_in_from_the_b_it_ran_at() -> None:
    """Serial ran at B=1 only (its rate is one model's at any B): the fused array's speedup over it at
    its best B reads that rate, and says which B it came from; the other baselines only at the same B."""
    import pandas as pd

    from gpurepro.hfta_study.summary import speedups

    rates = {("serial", 1): 10.0, ("mps", 8): 80.0, ("mps", 32): 70.0, ("concurrent", 8): 50.0,
             ("hfta", 8): 40.0, ("hfta", 32): 120.0}  # fmt: skip
    table = pd.DataFrame(
        [
            {
                "profile": "h100",
                "workload": "resnet18",
                "batch_size": 128,
                "image_size": 64,
                "seq_len": 128,
                "precision": "fp16",
                "gpu_name": "GPU",
                "run": 1,
                "mode": mode,
                "step": "stock",
                "b": b,
                "status": "ok",
                "metric": "throughput",
                "value": value,
            }  # fmt: skip
            for (mode, b), value in rates.items()
        ]
    )
    speedup = speedups(table)
    at_best = speedup[(speedup["metric"] == "speedup") & (speedup["statistic"] == "at_best_b")]
    by_baseline = at_best.set_index("baseline")
    assert by_baseline.loc["serial", "value"] == 12.0 and by_baseline.loc["serial", "baseline_b"] == 1
    assert by_baseline.loc["mps", "value"] == 120.0 / 70.0 and by_baseline.loc["mps", "baseline_b"] == 32
    assert "concurrent" not in by_baseline.index  # concurrent never ran at B=32: no reading at it
