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
