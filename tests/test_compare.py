"""gpurepro compare: two made runs (tables, raw reps, sidecars written here), each grade, what changed,
the CLI's outputs and the workflow target's message without compare_with."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from gpurepro.cli import main
from gpurepro.compare import changes, match
from gpurepro.compare.folders import default_out
from gpurepro.compare.grade import (
    FASTER,
    HIGHER,
    NOT_COMPARABLE,
    SAME,
    SLOWER,
    UNRESOLVED,
    dispersion_change,
    grade,
    grade_difference,
    metric_kind,
)
from gpurepro.compare.outputs import write
from gpurepro.compare.pack import sha256
from gpurepro.compare.runs import load_run
from gpurepro.errors import GpureproError
from gpurepro.stats import Interval
from gpurepro.tables import describe, long_frame, single

from .conftest import run_snakemake

GPU = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-aaaa", "driver_version": "580.1", "power_limit_w": 700.0}
SOFTWARE = {"python": "3.12.3", "torch": "2.11.0"}


def _reps(median: float, n: int = 20, seed: int = 0) -> np.ndarray:
    """n reps around `median` with 0.5% noise."""
    return median * (1 + 0.005 * np.random.default_rng(seed).standard_normal(n))


def _write(path: Path, frame: pd.DataFrame, sidecar: dict | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    if sidecar is not None:
        path.with_name(f"{path.stem}.provenance.json").write_text(json.dumps(sidecar))


def make_run(
    root: Path,
    name: str = "h100",
    *,
    sgemm_ms: float = 20.0,
    latency_ms: float = 7.0,
    idle_w: float = 70.0,
    sizes: tuple[int, ...] = (1024,),
    cast_protocol: str = "region_cached",
    gpu: dict | None = None,
    software: dict | None = None,
    fp32_rate: float = 51.0,
    seed: int = 0,
    start_temp_c: float = 38.0,
) -> Path:
    """A results folder of one device: sgemm, inference and reference tables with their raw reps."""
    run = root / name
    sidecar = {"profile": name, "gpus": [gpu or GPU], "software": software or SOFTWARE, "config_hash": "abc"}
    sidecar["measurement"] = {
        "cooldown": {"status": "reached", "end_temp_c": start_temp_c},
        "idle": {"0": {"power_w": idle_w}},
    }
    identity = {
        "profile": name,
        "device": "0",
        "gpu_name": (gpu or GPU)["name"],
        "gpu_uuid": (gpu or GPU)["uuid"],
    }
    frames = []
    for n in sizes:
        ms = _reps(sgemm_ms * (n / 1024) ** 3, seed=seed + n)
        raw = f"cublas_n{n}.csv"
        _write(run / "sgemm" / "raw" / raw, pd.DataFrame({"ms": ms, "tflops": 2 * n**3 / ms / 1e9}), sidecar)
        keys = {"study": "sgemm", **identity, "backend": "cublas", "n": n, "source_file": raw}
        rows = describe(pd.Series(ms), "time", "ms") + describe(
            pd.Series(2 * n**3 / ms / 1e9), "rate", "TFLOP/s"
        )
        frames.append(long_frame(keys, [*rows, single("idle_power", idle_w, "W")]))
    _write(run / "tables" / "sgemm.csv", pd.concat(frames))

    ms = _reps(latency_ms, seed=seed + 1)
    raw = "deit-b_b1_fp16_eager.csv"
    _write(run / "inference" / "raw" / "deit" / raw, pd.DataFrame({"ms": ms, "runs": 100}), sidecar)
    point = {"family": "deit", "model": "deit-b", "seq_len": None, "batch_size": 1, "precision": "fp16"}
    keys = {"study": "inference", **identity, **point, "mode": "eager", "cast_protocol": cast_protocol}
    keys.update(status="ok", reason="", source_file=raw)
    _write(run / "tables" / "inference_deit.csv", long_frame(keys, describe(pd.Series(ms), "latency", "ms")))

    rates = _reps(fp32_rate, seed=seed + 2)
    raw_rates = pd.DataFrame({"reference": "fp32_gemm", "rep": range(len(rates)), "value": rates})
    _write(run / "reference" / "raw" / "rates.csv", raw_rates, sidecar)
    keys = {"study": "reference", **identity, "status": "ok", "reason": "", "source_file": "rates.csv"}
    _write(
        run / "tables" / "reference.csv", long_frame(keys, describe(pd.Series(rates), "fp32_gemm", "TFLOP/s"))
    )
    return run


def _compare(a: Path, b: Path) -> pd.DataFrame:
    return match.compare(load_run(a), load_run(b))


def _row(table: pd.DataFrame, metric: str, **keys: object) -> pd.Series:
    rows = table[table["metric"] == metric]
    for column, value in keys.items():
        rows = rows[rows[column].astype(str) == str(value)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_a_rerun_of_the_same_gpu_is_the_same_within_noise(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", seed=0)
    b = make_run(tmp_path / "b", seed=10, idle_w=71.0)
    table = _compare(a, b)
    latency = _row(table, "latency")
    assert latency["grade"] == SAME and latency["ci_low"] <= 1 <= latency["ci_high"]
    assert latency["reps_a"] == latency["reps_b"] == 20
    # one process a side: judged by the between-process spread measured for the study, said so
    idle = _row(table, "idle_power")
    assert idle["grade"] == SAME
    assert "1 process a side: measured between-process GSD 1.01 (sgemm, GPU-bound" in idle["summary"]


def test_a_slower_gpu_is_slower_by_the_change_resolved(tmp_path: Path) -> None:
    table = _compare(make_run(tmp_path / "a"), make_run(tmp_path / "b", sgemm_ms=24.0, seed=3))
    time = _row(table, "time", n=1024)
    assert time["grade"] == SLOWER and time["better"] == "B worse"
    assert time["ratio"] == pytest.approx(1.2, rel=0.01) and time["ci_low"] > 1
    assert "slower by 20." in time["summary"] and "resolved" in time["summary"]
    # the rate is lower by the same factor: slower too, not "higher/lower"
    assert _row(table, "rate", n=1024)["grade"] == SLOWER


def test_a_faster_gpu_is_faster_and_a_single_value_beyond_its_floor_is_higher(tmp_path: Path) -> None:
    table = _compare(make_run(tmp_path / "a"), make_run(tmp_path / "b", latency_ms=5.0, idle_w=80.0))
    latency = _row(table, "latency")
    assert latency["grade"] == FASTER and latency["better"] == "B better" and latency["ci_high"] < 1
    idle = _row(table, "idle_power")
    assert idle["grade"] == HIGHER and "measured between-process GSD" in idle["basis"]


def test_a_point_on_one_side_only_is_not_comparable(tmp_path: Path) -> None:
    table = _compare(make_run(tmp_path / "a", sizes=(1024, 2048)), make_run(tmp_path / "b"))
    absent = table[(table["table"] == "sgemm") & (table["n"].astype(str) == "2048")]
    assert len(absent) == 1
    assert absent.iloc[0]["grade"] == NOT_COMPARABLE
    # the near point of the other run is named, so a changed size or mode reads as such
    assert absent.iloc[0]["why"] == "absent in B (it has this point with n=1024)"


def test_another_cast_protocol_is_not_comparable(tmp_path: Path) -> None:
    table = _compare(make_run(tmp_path / "a"), make_run(tmp_path / "b", cast_protocol="weights_cast"))
    latency = _row(table, "latency")
    assert latency["grade"] == NOT_COMPARABLE
    assert latency["why"] == "different cast_protocol (A: region_cached, B: weights_cast)"


def test_what_changed_lists_only_the_fields_that_differ(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a")
    b = make_run(
        tmp_path / "b", gpu={**GPU, "driver_version": "590.2"}, software={**SOFTWARE, "torch": "2.12.0"}
    )
    changed = changes.changes(load_run(a), load_run(b)).set_index("field")
    assert set(changed.index) == {"driver", "torch"}
    assert (changed.loc["driver", "a"], changed.loc["driver", "b"]) == ("580.1", "590.2")
    assert (changed.loc["torch", "a"], changed.loc["torch", "b"]) == ("2.11.0", "2.12.0")


def test_what_changed_names_a_warmer_card(tmp_path: Path) -> None:
    """The GPU's temperature at its points' start and its idle power, where the runs differ beyond a
    degree or two and 5%: the cause of temperature and power rows that moved."""
    a = make_run(tmp_path / "a")
    assert changes.changes(load_run(a), load_run(make_run(tmp_path / "b", start_temp_c=39.0))).empty
    b = make_run(tmp_path / "c", start_temp_c=47.0, idle_w=76.0)
    changed = changes.changes(load_run(a), load_run(b)).set_index("field")
    start = changed.loc["GPU temperature at the points' start (C)"]
    assert (start["a"], start["b"]) == ("38 (38-38)", "47 (47-47)")
    assert changed.loc["idle power (W)", "b"] == "76 (76-76)"  # 8.6% above A's 70 W


def _keep_config(run: Path, config: dict) -> None:
    """The config the run's sidecars name (config_hash "abc" in make_run), as a run keeps it."""
    (run / "config").mkdir(exist_ok=True)
    (run / "config" / "abc.yaml").write_text(yaml.safe_dump(config))


def test_what_changed_lists_the_config_keys_that_differ(tmp_path: Path) -> None:
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    base = {"results_dir": "results", "inference": {"energy_window_s": 10, "warmup": 20}, "gpus": [0]}
    _keep_config(a, base)
    assert not any(
        changes.changes(load_run(a), load_run(b))["field"].str.startswith("config ")
    )  # B kept none
    _keep_config(b, {**base, "results_dir": "rerun", "inference": {"energy_window_s": 5, "warmup": 20}})
    changed = changes.changes(load_run(a), load_run(b)).set_index("field")
    assert sorted(f for f in changed.index if f.startswith("config ")) == [
        "config inference.energy_window_s",
        "config results_dir",
    ]
    assert (
        changed.loc["config inference.energy_window_s", "a"],
        changed.loc["config inference.energy_window_s", "b"],
    ) == ("10", "5")


def test_another_gpu_shows_the_reference_rates_ratio(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a")
    h200 = {**GPU, "name": "NVIDIA H200", "uuid": "GPU-bbbb"}
    b = make_run(tmp_path / "b", "h200", gpu=h200, fp32_rate=61.2)
    changed = changes.changes(load_run(a), load_run(b)).set_index("field")
    assert changed.loc["GPU model", "b"] == "NVIDIA H200"
    assert changed.loc["GPU UUID", "a"] == "GPU-aaaa"
    reference = changed.loc["reference rate fp32_gemm (TFLOP/s)"]
    assert reference["note"].startswith("B/A 1.2") and "faster" in reference["note"]
    # another profile name does not unmatch the points: profile is the run's identity, not a key
    assert _row(_compare(a, b), "latency")["grade"] != NOT_COMPARABLE


def test_the_cli_writes_the_page_the_table_and_the_figure(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", sizes=(1024, 2048))
    h200 = {**GPU, "name": "NVIDIA H200", "uuid": "GPU-bbbb"}
    b = make_run(tmp_path / "b", "h200", gpu=h200, sgemm_ms=16.0, fp32_rate=61.2)
    out = tmp_path / "out"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    for name in ("compare.md", "compare.csv", "compare.html", "compare.png"):
        assert (out / name).stat().st_size > 0, name
    page = (out / "compare.md").read_text()
    assert "## What changed" in page and "reference rates B/A: fp32_gemm" in page
    assert "faster by" in page and "not comparable: absent in B" in page
    assert set(pd.read_csv(out / "compare.csv")["grade"]) >= {SAME, FASTER, NOT_COMPARABLE}


def test_the_cli_names_a_folder_that_is_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path), str(make_run(tmp_path / "b"))]) == 2
    assert "not a results folder of one device" in capsys.readouterr().err


def test_the_workflow_target_says_how_to_name_the_other_run(tmp_path: Path, workflow_copy: Path) -> None:
    result = run_snakemake("-n", "compare", "--cores", "1", "--config", "device=cpu", cwd=workflow_copy)
    assert result.returncode != 0
    assert "config compare_with is empty" in result.stdout + result.stderr
    planned = run_snakemake(
        "-n",
        "compare",
        "--cores",
        "1",
        "--config",
        "device=cpu",
        f"compare_with={make_run(tmp_path)}",
        cwd=workflow_copy,
    )
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "results/compare/h100_vs_cpu/compare.md" in planned.stdout


def test_a_packed_run_is_compared_after_its_checksum_is_verified(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a")
    (a / "verdict.md").write_text("# verdict\n")
    _keep_config(a, {"results_dir": "results"})
    (a / "logs").mkdir()
    (a / "logs" / "x.log").write_text("left out\n")
    archive = tmp_path / "packed" / "lastmonth.tar.gz"
    assert main(["pack", str(a), "--out", str(archive)]) == 0
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {
        "h100/tables/sgemm.csv",
        "h100/sgemm/raw/cublas_n1024.provenance.json",
        "h100/verdict.md",
        "h100/config/abc.yaml",
    } <= names
    assert "h100/logs/x.log" not in names
    assert Path(f"{archive}.sha256").read_text().split() == [sha256(archive), archive.name]

    b = make_run(tmp_path / "b", sgemm_ms=24.0, seed=3)
    out = tmp_path / "out"
    assert main(["compare", str(archive), str(b), "--out", str(out)]) == 0
    assert "slower by" in (out / "compare.md").read_text()
    assert default_out(archive, b).name == "lastmonth_vs_h100"

    Path(f"{archive}.sha256").write_text(f"{'0' * 64}  {archive.name}\n")
    with pytest.raises(GpureproError, match="does not match"):
        write(archive, b, out)


def test_a_dispersion_is_read_in_its_own_units_and_not_graded_without_an_interval() -> None:
    """A CV of 10 reps moving from 0.36% to 0.22% (seen between two H100 runs) reads as a difference in
    percentage points; without an interval it cannot be told from noise (never "same"), where a time's
    ratio meets its floor."""
    assert metric_kind("rep_cv", "1", "value") == "dispersion"
    assert metric_kind("time", "%", "spread_pct") == "dispersion"
    assert metric_kind("time", "ms", "median") == "time"
    change = dispersion_change(0.0036, 0.0022, "1", "rep_cv", "value")
    assert change == "0.36% -> 0.22% (-0.14 pp)"
    assert (
        grade_difference(0.0036, 0.0022, None, "dispersion", "not graded", change, np.nan, 0.01).grade
        == UNRESOLVED
    )
    assert (
        grade_difference(0.0036, 0.0036, None, "dispersion", "not graded", change, np.nan, 0.01).grade == SAME
    )
    assert grade(0.0022 / 0.0036, None, "time").grade != SAME


def test_an_interval_across_processes_decides_alone() -> None:
    """Processes see what a rerun adds (the reps of one cannot), so their interval needs no floor beside
    it: a tight interval off 1 by 0.5% is a change; one spanning 1 is not, and reads the same only inside
    the ±5% margin for a time; the floor judges only a ratio without an interval."""
    assert grade(1.005, Interval(1.005, 1.004, 1.006), "time").grade == SLOWER
    assert grade(1.05, Interval(1.05, 1.04, 1.06), "time").grade == SLOWER
    assert grade(1.05, Interval(1.05, 0.99, 1.1), "time").grade == UNRESOLVED  # spans 1, beyond 5%
    assert grade(1.02, Interval(1.02, 0.99, 1.04), "time").grade == SAME  # spans 1, inside 5%
    assert grade(1.02, None, "time").grade == SAME and grade(1.04, None, "time").grade == SLOWER


def test_job_times_and_counts_of_a_measurement_are_not_graded(tmp_path: Path) -> None:
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    for run, seconds, count in ((a, 10.0, 100.0), (b, 30.0, 300.0)):
        runtimes = long_frame(
            {"study": "runtime", "step": "sgemm", "job": "x"}, [single("wall_time", seconds, "s")]
        )
        runtimes.to_csv(run / "tables" / "runtimes.csv", index=False)
        sgemm = pd.read_csv(run / "tables" / "sgemm.csv")
        extra = sgemm.iloc[[0]].assign(metric="timed_inferences", statistic="value", unit="runs", value=count)
        # a window length the protocol sets: the same in both runs, and no finding of either
        window = sgemm.iloc[[0]].assign(metric="energy_window", statistic="value", unit="s", value=10.0)
        pd.concat([sgemm, extra, window]).to_csv(run / "tables" / "sgemm.csv", index=False)
    table = _compare(a, b)
    assert "runtimes" not in set(table["table"])
    assert not {"timed_inferences", "energy_window"} & set(table["metric"])


def test_a_metric_neither_run_has_a_value_for_is_left_out(tmp_path: Path) -> None:
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    for run in (a, b):
        sgemm = pd.read_csv(run / "tables" / "sgemm.csv")
        extra = sgemm.iloc[[0]].assign(metric="normalised_throughput", statistic="x", unit="x", value=np.nan)
        pd.concat([sgemm, extra]).to_csv(run / "tables" / "sgemm.csv", index=False)
    assert "normalised_throughput" not in set(_compare(a, b)["metric"])


def _with_metric(run: Path, metric: str, statistic: str, unit: str, value: float) -> None:
    """The run's DeiT point with one more single-valued metric."""
    deit = pd.read_csv(run / "tables" / "inference_deit.csv")
    extra = deit.iloc[[0]].assign(metric=metric, statistic=statistic, unit=unit, value=value)
    pd.concat([deit, extra]).to_csv(run / "tables" / "inference_deit.csv", index=False)


def _with_utilisation(run: Path, busy_pct: float) -> None:
    """The run's DeiT point with its GPU busy `busy_pct` of its energy window."""
    _with_metric(run, "gpu_utilization", "energy_window_median", "%", busy_pct)


@pytest.mark.parametrize(("busy", "host_bound"), [((13.0, 17.0), True), ((13.0, 60.0), False)])
def test_a_change_at_a_point_whose_gpu_sat_mostly_idle_is_marked_host_bound(
    tmp_path: Path, busy: tuple[float, float], host_bound: bool
) -> None:
    # 3x: beyond the measured host-paced spread of one process's figures, so a change either way
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b", latency_ms=21.0, seed=5)
    _with_utilisation(a, busy[0])
    _with_utilisation(b, busy[1])
    table = _compare(a, b)
    latency = _row(table, "latency", statistic="median")
    assert latency["grade"] == SLOWER  # the grade stands either way
    assert ("host-bound point (GPU busy 17% at most)" in latency["summary"]) is host_bound
    assert pd.isna(_row(table, "time", n=1024, statistic="median")["host_bound"])  # SGEMM: no utilisation
    paths, summary = write(a, b, tmp_path / "out")
    assert ("lie at host-bound points" in paths[0].read_text()) is host_bound
    assert ("changes at host-bound points" in summary) is host_bound


def _variability_run(root: Path, ms: np.ndarray) -> Path:
    """A run with one GPU's variability reps and the rep_cv its summary computes from them."""
    run = root / "h100"
    reps = pd.DataFrame({"device": "0", "gpu_uuid": "GPU-aaaa", "backend": "cublas", "n": 25536, "ms": ms})
    _write(run / "tables" / "variability_reps.csv", reps)
    keys = {"study": "variability", "profile": "h100", "backend": "cublas", "n": 25536, "scope": "gpu 0"}
    cv = float(ms.std(ddof=0) / ms.mean())
    _write(run / "tables" / "variability_summary.csv", long_frame(keys, [single("rep_cv", cv, "1")]))
    return run


def test_a_dispersion_is_graded_by_its_interval_over_the_reps(tmp_path: Path) -> None:
    """A GPU's rep-to-rep CV, one process a side, read as B - A with the bootstrap interval of the
    difference over each side's reps: 10 reps with one slow outlier against 10 steady ones doubles the CV
    yet resolves nothing; 40 reps twice as spread resolve it."""
    rng = np.random.default_rng(1)
    steady = 650 * (1 + 0.002 * rng.standard_normal(10))
    outlier = np.append(650 * (1 + 0.002 * rng.standard_normal(9)), 655.0)
    runs = _variability_run(tmp_path / "a", steady), _variability_run(tmp_path / "b", outlier)
    noisy = _row(_compare(*runs), "rep_cv")
    assert noisy["b_value"] > 2 * noisy["a_value"] and noisy["reps_a"] == noisy["reps_b"] == 10
    assert pd.isna(noisy["ratio"]) and noisy["difference"] == pytest.approx(
        noisy["b_value"] - noisy["a_value"]
    )
    assert noisy["diff_low"] < 0 < noisy["diff_high"] and noisy["grade"] == SAME
    assert " pp)" in noisy["summary"] and "%;" not in noisy["summary"]
    wide = 650 * (1 + 0.002 * rng.standard_normal(40))
    wider = 650 * (1 + 0.004 * rng.standard_normal(40))
    runs = _variability_run(tmp_path / "c", wide), _variability_run(tmp_path / "d", wider)
    clear = _row(_compare(*runs), "rep_cv")
    assert clear["grade"] == HIGHER and clear["diff_low"] > 0 and "each side's reps" in clear["summary"]


@pytest.mark.parametrize(("latency_ms", "grade_read"), [(10.0, UNRESOLVED), (21.0, SLOWER)])
def test_a_host_bound_change_within_the_hosts_spread_is_unresolved(
    tmp_path: Path, latency_ms: float, grade_read: str
) -> None:
    """7 -> 10 ms (1.43x), one process a side, at a point whose GPU sat 13-17% busy is within the
    host-paced between-process spread measured for inference (GSD 1.41): too wide an interval to call it
    the same or a change; 7 -> 21 ms (3x) is a change. Active
    idle power there, taken at rest, is read against the GPU-bound spread; the same change at a busy
    point stands."""
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", latency_ms=latency_ms, seed=5)
    for run, busy, idle_w in ((a, 13.0, 70.0), (b, 17.0, 80.0)):
        _with_utilisation(run, busy)
        _with_metric(run, "active_idle_power", "value", "W", idle_w)
    table = _compare(a, b)
    latency = _row(table, "latency", statistic="median")
    assert latency["grade"] == grade_read and latency["pace"] == "host_paced"
    assert (
        "measured between-process GSD 1.41 (inference, host-paced; config/between_process.yaml)"
        in (latency["summary"])
    )
    assert "host-bound point (GPU busy 17% at most)" in latency["summary"]
    idle = _row(table, "active_idle_power")
    assert idle["grade"] == HIGHER and idle["host_bound"] == 17.0 and idle["pace"] == "gpu_bound"
    paths, summary = write(a, b, tmp_path / "out")
    assert "lie at host-bound points" in paths[0].read_text()  # active idle power, at least
    assert "changes at host-bound points" in summary
    busy = make_run(tmp_path / "c", latency_ms=latency_ms, seed=5)
    _with_utilisation(busy, 60.0)
    assert _row(_compare(a, busy), "latency", statistic="median")["grade"] == SLOWER


def test_reference_rates_of_every_gpu_of_a_placed_run_are_its_processes(tmp_path: Path) -> None:
    """A placed run measures the reference rates once on each GPU: the table has one row per card for
    the point, which compare takes as that many processes (their median, an interval across them), not
    as one process measured twice (ambiguous)."""
    a = make_run(tmp_path / "a", seed=0)
    b = make_run(tmp_path / "b", seed=10)
    path = b / "tables" / "reference.csv"
    one = pd.read_csv(path)
    other = one.assign(gpu_uuid="GPU-bbbbbbbb", device="1", source_file="rates_gpu1.csv")
    pd.concat([one, other]).to_csv(path, index=False)
    rate = _row(_compare(a, b), "fp32_gemm", statistic="median")
    assert rate["grade"] == SAME and rate["processes_a"] == 1 and rate["processes_b"] == 2
    assert "ambiguous" not in str(rate["summary"])
