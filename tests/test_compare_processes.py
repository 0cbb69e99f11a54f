"""gpurepro compare across processes, on made tables only (the folders travel without raw files): a point's
processes are its sample, a change is resolved by their interval, one process a side falls back to the
measured between-process spread, dispersions are read in their own units, derived tables are skipped."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from gpurepro.compare import hostbound, match, spread
from gpurepro.compare.grade import FASTER, HIGHER, NOT_COMPARABLE, SAME, UNRESOLVED
from gpurepro.compare.runs import load_run
from gpurepro.errors import GpureproError
from gpurepro.tables import long_frame, single

from .conftest import ROOT

HFTA = {"study": "hfta", "profile": "h100", "device": "0", "workload": "resnet18", "precision": "amp"}


def _hfta_rows(b: int, mode: str, step: str, rates: list[float]) -> pd.DataFrame:
    """One HFTA point measured in len(rates) processes (`run` 1..k), one throughput row each."""
    frames = [
        long_frame(
            {
                **HFTA,
                "mode": mode,
                "step": step,
                "b": b,
                "run": run,
                "source_file": f"{mode}_b{b}_r{run}.csv",
            },
            [single("throughput", rate, "samples/s")],
        )
        for run, rate in enumerate(rates, start=1)
    ]
    return pd.concat(frames, ignore_index=True)


def _run(root: Path, *tables: tuple[str, pd.DataFrame]) -> Path:
    """A results folder holding only `tables` (no raw files, no sidecars)."""
    (root / "tables").mkdir(parents=True)
    for name, table in tables:
        table.to_csv(root / "tables" / f"{name}.csv", index=False)
    return root


def _compare(a: Path, b: Path) -> pd.DataFrame:
    return match.compare(load_run(a), load_run(b))


def _row(table: pd.DataFrame, **keys: object) -> pd.Series:
    rows = table
    for column, value in keys.items():
        rows = rows[rows[column].astype(str) == str(value)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


# the fused array at B=8 (stock: host-paced), ~47,000 against ~59,800 samples/s, as in issue 41
A_RATES, B_RATES = [46_100.0, 47_000.0, 47_900.0], [74_300.0, 75_200.0, 76_100.0]


def test_a_change_resolved_with_three_processes_a_side_and_not_with_one(tmp_path: Path) -> None:
    """The same medians (47,000 -> 75,200 samples/s, 1.6x): three processes a side that agree within 2%
    resolve it by Welch's t across processes (never narrower than the measured spread allows for three
    a side: x/1.52); one process a side falls back to the host-paced spread measured for HFTA (GSD 1.3:
    x/2.07 for one a side), within which 1.6x lies: too wide to tell, never "the same"."""
    three = _compare(
        _run(tmp_path / "a3", ("hfta", _hfta_rows(8, "hfta", "stock", A_RATES))),
        _run(tmp_path / "b3", ("hfta", _hfta_rows(8, "hfta", "stock", B_RATES))),
    )
    resolved = _row(three, metric="throughput")
    assert (resolved["a_value"], resolved["b_value"]) == (47_000.0, 75_200.0)
    assert (resolved["processes_a"], resolved["processes_b"]) == (3, 3)
    assert resolved["grade"] == FASTER and resolved["ci_low"] > 1
    assert "3 v 3 processes: Welch t across processes" in resolved["basis"]
    assert "run" not in three.columns  # the process is the sample, not a key

    # 1.27x (the fused B=8 array of two quick runs, 46,930 -> 59,830): three processes that happen to
    # agree give a tight Welch interval, widened to what the measured spread allows: unresolved
    tight = _compare(
        _run(tmp_path / "a3t", ("hfta", _hfta_rows(8, "hfta", "stock", A_RATES))),
        _run(tmp_path / "b3t", ("hfta", _hfta_rows(8, "hfta", "stock", [58_900.0, 59_800.0, 60_700.0]))),
    )
    widened = _row(tight, metric="throughput")
    assert widened["grade"] == UNRESOLVED and widened["ci_low"] < 1 < widened["ci_high"]
    assert "widened to the measured between-process GSD 1.3 (hfta, host-paced" in widened["basis"]

    one = _compare(
        _run(tmp_path / "a1", ("hfta", _hfta_rows(8, "hfta", "stock", A_RATES[1:2]))),
        _run(tmp_path / "b1", ("hfta", _hfta_rows(8, "hfta", "stock", B_RATES[1:2]))),
    )
    alone = _row(one, metric="throughput")
    assert alone["ratio"] == pytest.approx(resolved["ratio"])
    assert alone["grade"] == UNRESOLVED and alone["pace"] == "host_paced"
    assert alone["ci_low"] < 1 < alone["ci_high"]
    assert alone["basis"].startswith(
        "1 process a side: measured between-process GSD 1.3 (hfta, host-paced; config/between_process.yaml)"
    )


def test_one_process_a_side_falls_back_to_the_measured_spread_of_its_kind(tmp_path: Path) -> None:
    """A GPU-bound point (fused B=32) reads against HFTA's GPU-bound GSD 1.03, serial mode against the
    host-paced one; one process against three counts both; a study without a measured spread says so
    and takes the noise floor."""
    a_profiling = long_frame({"study": "profiling", "workload": "sgemm"}, [single("kernel_time", 10.0, "ms")])
    b_profiling = long_frame({"study": "profiling", "workload": "sgemm"}, [single("kernel_time", 10.2, "ms")])
    a = _run(
        tmp_path / "a",
        (
            "hfta",
            pd.concat([_hfta_rows(32, "hfta", "stock", [100.0]), _hfta_rows(1, "serial", "stock", [50.0])]),
        ),
        ("profiling", a_profiling),
    )
    b = _run(
        tmp_path / "b",
        (
            "hfta",
            pd.concat(
                [_hfta_rows(32, "hfta", "stock", [110.0]), _hfta_rows(1, "serial", "stock", [45.0, 46, 47])]
            ),
        ),
        ("profiling", b_profiling),
    )
    table = _compare(a, b)
    fused = _row(table, metric="throughput", b=32)
    assert fused["grade"] == FASTER and fused["pace"] == "gpu_bound"
    assert (
        "measured between-process GSD 1.03 (hfta, GPU-bound; config/between_process.yaml)" in fused["basis"]
    )
    serial = _row(table, metric="throughput", b=1)
    assert serial["pace"] == "host_paced" and serial["grade"] == UNRESOLVED
    assert serial["basis"].startswith("1 v 3 processes: measured between-process GSD 1.3 (hfta, host-paced")
    profiling = _row(table, metric="kernel_time")
    assert profiling["grade"] == SAME and math.isnan(profiling["ci_low"])
    assert "no measured between-process spread for profiling; noise floor 3% for time" in profiling["basis"]


def _variability(spread_pct: float, low: float, high: float) -> pd.DataFrame:
    """The spread of one metric between two GPUs with its interval, and its CV (no interval kept)."""
    keys = {"study": "variability", "profile": "h100", "backend": "cublas", "n": 8192, "scope": "across gpus"}
    rows = [
        single("power", spread_pct, "%", "spread_pct"),
        single("power", low, "%", "spread_pct_ci_low"),
        single("power", high, "%", "spread_pct_ci_high"),
        single("power", 1 + spread_pct / 100, "1", "max_over_min"),
        single("power", spread_pct / 200, "1", "cv"),
    ]
    return long_frame(keys, rows)


@pytest.mark.parametrize(
    ("a_interval", "b_interval", "read"),
    [((0.0, 0.9), (0.5, 2.8), UNRESOLVED), ((0.0, 0.5), (1.0, 2.3), HIGHER)],
)
def test_a_dispersion_is_compared_in_its_own_units(
    tmp_path: Path, a_interval: tuple[float, float], b_interval: tuple[float, float], read: str
) -> None:
    """The power spread between two GPUs 0.20% -> 1.62% is +1.42 pp, not "higher by 701%": not resolved
    where the two intervals overlap (and, reaching past ±1 pp, not the same either), resolved where they
    do not; max/min reads its spread's interval; the CV, kept without an interval, cannot be told."""
    a = _run(tmp_path / "a", ("variability_summary", _variability(0.20, *a_interval)))
    b = _run(tmp_path / "b", ("variability_summary", _variability(1.62, *b_interval)))
    table = _compare(a, b)
    spread_row = _row(table, metric="power", statistic="spread_pct")
    assert spread_row["kind"] == "dispersion" and math.isnan(spread_row["ratio"])
    assert spread_row["difference"] == pytest.approx(1.42)
    assert spread_row["grade"] == read
    assert "0.20% -> 1.62% (+1.42 pp)" in spread_row["summary"] and "701" not in spread_row["summary"]
    assert f"intervals A [{a_interval[0]:.4g}, {a_interval[1]:.4g}]" in spread_row["basis"]
    assert ("do not overlap" in spread_row["basis"]) is (read == HIGHER)
    ratio = _row(table, metric="power", statistic="max_over_min")
    assert ratio["grade"] == read and ratio["diff_low"] == pytest.approx(spread_row["diff_low"] / 100)
    cv = _row(table, metric="power", statistic="cv")
    assert cv["grade"] == UNRESOLVED and "dispersion without an interval: cannot tell" in cv["basis"]
    assert "0.10% -> 0.81% (+0.71 pp)" in cv["summary"]


def test_tables_derived_across_processes_are_skipped(tmp_path: Path) -> None:
    """`<table>_processes.csv` summarises the processes the other tables hold: comparing it too would count
    each point twice, so it is left out whether one or both runs have it."""
    summary = long_frame({**HFTA, "mode": "hfta", "step": "stock", "b": 8}, [single("throughput", 1.0, "x")])
    a = _run(tmp_path / "a", ("hfta", _hfta_rows(8, "hfta", "stock", A_RATES)), ("hfta_processes", summary))
    b = _run(
        tmp_path / "b",
        ("hfta", _hfta_rows(8, "hfta", "stock", A_RATES)),
        ("hfta_processes", summary.assign(value=2.0)),
        ("inference_deit_processes", summary),
    )
    table = _compare(a, b)
    assert set(table["table"]) == {"hfta"}
    assert _row(table, metric="throughput")["grade"] == UNRESOLVED  # host-paced: too wide to call same


def test_a_failed_process_is_left_out_and_the_point_stands(tmp_path: Path) -> None:
    """A repeat recorded as failed (no value, its status and reason) leaves the point on the rest."""
    rates = [94_000.0, 95_000.0]  # 2x A: beyond the measured spread for three against two processes
    failed = _hfta_rows(8, "hfta", "stock", [*rates, math.nan])
    failed.loc[failed["run"] == 3, ["status", "reason"]] = ["failed", "CUDA out of memory"]
    a = _run(tmp_path / "a", ("hfta", _hfta_rows(8, "hfta", "stock", A_RATES).assign(status="ok", reason="")))
    b = _run(tmp_path / "b", ("hfta", failed.fillna({"status": "ok", "reason": ""})))
    row = _row(_compare(a, b), metric="throughput")
    assert (row["processes_a"], row["processes_b"]) == (3, 2)
    assert row["b_value"] == pytest.approx(94_500.0)
    assert row["grade"] == FASTER and row["basis"].startswith("3 v 2 processes: Welch t")


def test_two_rows_in_one_process_are_ambiguous(tmp_path: Path) -> None:
    twice = pd.concat([_hfta_rows(8, "hfta", "stock", [1.0]), _hfta_rows(8, "hfta", "stock", [2.0])])
    a = _run(tmp_path / "a", ("hfta", twice))
    b = _run(tmp_path / "b", ("hfta", _hfta_rows(8, "hfta", "stock", [1.0, 2.0])))
    row = _row(_compare(a, b), metric="throughput")
    assert row["grade"] == NOT_COMPARABLE and row["why"].startswith(
        "ambiguous: measured 2 times in one process"
    )


def test_the_measured_spreads_load_and_a_bad_file_names_its_key(tmp_path: Path) -> None:
    spreads = spread.load(ROOT / "config" / "between_process.yaml")
    assert {study for study, _, _ in spreads} >= {"inference", "hfta", "ddp", "sgemm"}
    assert spread.find(spreads, "inference", spread.HOST_PACED).gsd == 1.41  # type: ignore[union-attr]
    assert spread.find(spreads, "ddp", spread.HOST_PACED) is None
    # a metric measured apart reads its own spread, every other metric the study's
    power = spread.find(spreads, "sgemm", spread.GPU_BOUND, "power")
    time = spread.find(spreads, "sgemm", spread.GPU_BOUND, "time")
    assert power is not None and time is not None and power.gsd > time.gsd
    assert "(sgemm power, GPU-bound" in power.describe() and "(sgemm, GPU-bound" in time.describe()
    bad = tmp_path / "between_process.yaml"
    bad.write_text("inference:\n  host_paced: {gsd: 0.9, processes: 8, source: x}\n")
    with pytest.raises(GpureproError, match=rf"{bad}: key inference.host_paced.gsd"):
        spread.load(bad)
    bad.write_text("inference:\n  host_bound: {gsd: 1.2, processes: 8, source: x}\n")
    with pytest.raises(GpureproError, match="key inference: .*allowed keys: gpu_bound, host_paced"):
        spread.load(bad)
    bad.write_text(
        "sgemm:\n  gpu_bound: {gsd: 1.01, processes: 8, source: x, by_metric: {power: {gsd: 1.0}}}\n"
    )
    with pytest.raises(GpureproError, match="key sgemm.gpu_bound.by_metric.power"):
        spread.load(bad)
    with pytest.raises(GpureproError, match="do not exist"):
        spread.load(tmp_path / "absent.yaml")


def test_a_speedup_over_a_host_paced_baseline_is_host_paced() -> None:
    """The fused array at B=32 is GPU-bound, but its speedup over serial moves with the serial rate: read
    against the host-paced spread; over MPS at B=32 both sides are GPU-bound."""
    fused = {"mode": "hfta", "b": "32", "step": "stock", "baseline_step": "stock", "baseline_b": "1"}
    over_serial = hostbound.pace("hfta", {**fused, "baseline": "serial"}, "speedup", "x", math.nan)
    over_mps = hostbound.pace(
        "hfta", {**fused, "baseline": "mps", "baseline_b": "32"}, "speedup", "x", math.nan
    )
    assert (over_serial, over_mps) == ("host_paced", "gpu_bound")


def test_an_h100_against_an_h200_still_resolves_what_the_gpus_change(tmp_path: Path) -> None:
    """Real differences show through the between-process spreads: ResNet-50 on one GPU 1.25x (4,591
    against 5,752 images/s, one process a side, DDP's GPU-bound GSD 1.03) and the memory bandwidth 1.45x
    (the reference rates, which have no measured spread: the 3% floor for a rate), while the same
    points 2% apart are no change: the bandwidth the same by its floor, one DDP process a side too
    widely spread to call the same within the ±5% margin."""

    def run(root: Path, images_s: float, bandwidth: float) -> Path:
        ddp = long_frame(
            {"study": "ddp", "model": "resnet50", "precision": "fp16", "gpus": 1, "run": 1},
            [single("throughput", images_s, "images/s", "total")],
        )
        reference = long_frame(
            {"study": "reference"}, [single("memory_bandwidth", bandwidth, "GB/s", "median")]
        )
        return _run(root, ("ddp", ddp), ("reference", reference))

    h100 = run(tmp_path / "h100", 4591.0, 2980.0)
    table = _compare(h100, run(tmp_path / "h200", 5752.0, 4320.0))
    assert _row(table, metric="throughput")["grade"] == FASTER
    assert _row(table, metric="memory_bandwidth")["grade"] == FASTER
    nearby = _compare(h100, run(tmp_path / "again", 4591.0 * 1.02, 2980.0 * 1.02))
    assert _row(nearby, metric="memory_bandwidth")["grade"] == SAME
    assert _row(nearby, metric="throughput")["grade"] == UNRESOLVED
