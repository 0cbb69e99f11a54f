"""benchmarks/isolation.py off the GPU: its decision of which kinds of point may run beside other GPUs'
jobs, from paired rounds alone and beside busy neighbours."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "isolation.py"


def _isolation():  # the script, imported as a module (it is no package's)
    spec = importlib.util.spec_from_file_location("isolation_bench", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _rows(point: str, alone: list[float], beside: list[float]) -> list[dict]:
    return [
        {"round": r, "condition": condition, "point": point, "value": value}
        for condition, values in (("alone", alone), ("beside", beside))
        for r, value in enumerate(values, start=1)
    ]


def test_a_point_runs_beside_others_only_where_its_whole_interval_is_within_the_noise_floor() -> None:
    bench = _isolation()
    steady = _rows("sgemm", [51.1, 51.2, 51.0, 51.3, 51.1, 51.2], [51.0, 51.2, 51.1, 51.2, 51.0, 51.3])
    slowed = _rows("eager", [4.0, 4.1, 3.9, 4.0, 4.2, 4.0], [6.9, 7.1, 5.0, 6.6, 8.0, 7.0])
    # the median moves by 1%, but the rounds spread so far that a 3% change cannot be excluded
    unsure = _rows("noisy", [10.0, 10.0, 10.0, 10.0, 10.0, 10.0], [9.0, 11.2, 9.1, 11.0, 10.1, 10.2])
    rows = steady + slowed + unsure
    ratio, verdict = bench.decide(rows, "sgemm")
    assert verdict == "may run beside" and 0.99 < ratio.low <= ratio.high < 1.01
    ratio, verdict = bench.decide(rows, "eager")
    assert verdict == "keeps the host" and ratio.low > 1.2
    ratio, verdict = bench.decide(rows, "noisy")
    assert verdict == "keeps the host" and ratio.low < 1 < ratio.high
