"""benchmarks/isolation.py off the GPU: its decision of which kinds of point may run beside other GPUs'
jobs, from paired rounds alone and beside busy neighbours."""

from __future__ import annotations

from .conftest import benchmark_script


def _rows(point: str, alone: list[float], beside: list[float]) -> list[dict]:
    return [
        {"round": r, "condition": condition, "point": point, "value": value}
        for condition, values in (("alone", alone), ("beside", beside))
        for r, value in enumerate(values, start=1)
    ]


def test_a_point_runs_beside_others_only_where_its_whole_interval_is_within_the_noise_floor() -> None:
    bench = benchmark_script("isolation")
    steady = _rows("sgemm", [51.1, 51.2, 51.0, 51.3, 51.1, 51.2], [51.0, 51.2, 51.1, 51.2, 51.0, 51.3])
    slowed = _rows("eager", [4.0, 4.1, 3.9, 4.0, 4.2, 4.0], [6.9, 7.1, 5.0, 6.6, 8.0, 7.0])
    # the median moves by 1%, but the rounds spread so far that a 3% change cannot be excluded
    unsure = _rows("noisy", [10.0, 10.0, 10.0, 10.0, 10.0, 10.0], [9.0, 11.2, 9.1, 11.0, 10.1, 10.2])
    rows = steady + slowed + unsure
    ratio, verdict = bench.decide(rows, "sgemm")
    assert verdict == bench.MAY_RUN_BESIDE and 0.99 < ratio.low <= ratio.high < 1.01
    ratio, verdict = bench.decide(rows, "eager")
    assert verdict == bench.MOVED and ratio.low > 1.2
    ratio, verdict = bench.decide(rows, "noisy")
    assert verdict == bench.UNSHOWN and ratio.low < 1 < ratio.high
