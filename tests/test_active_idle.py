"""The active idle and the artifact's autocast protocol, on the CPU: the harness rests the device after
preparing a workload that asks for it (and only then), enters the workload's region around the timed reps
and the energy window, and records the windows' medians; the inference table's rows above the active
idle from a raw file, sidecar and trace made here (values computed by hand), beside files older than
them; and the eager runner's one autocast region, whose cast cache casts each weight once."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gpurepro.harness import TelemetrySettings, Workload, measure
from gpurepro.inference import modes
from gpurepro.inference.summary import summarise
from gpurepro.telemetry import CpuSource, subwindow_powers

from .test_inference import _fake_point

WATTS = 10.0  # the fake CPU's constant draw


class _LinearRapl:
    """A RAPL counter rising WATTS joules a second, so every window's power is known."""

    available = True
    root = Path("/nonexistent")

    def __init__(self) -> None:
        self.start = time.time()

    def joules(self) -> float:
        return WATTS * (time.time() - self.start)


SETTINGS = TelemetrySettings(
    rate_hz=100,
    idle_seconds=0.2,
    min_energy_window_s=0.2,
    cooldown_max_wait_s=0,
    sampler="thread",
    active_idle_seconds=0.3,
)


def _workload(events: list[str], active_idle: bool) -> Workload:
    """A workload that notes when it runs and whether its region is open."""
    inside = [False]

    @contextmanager
    def region() -> Iterator[None]:
        events.append("enter")
        inside[0] = True
        yield
        inside[0] = False
        events.append("exit")

    def timed_reps() -> pd.DataFrame:
        events.append(f"reps inside={inside[0]} at {time.time()}")
        start = time.time()
        time.sleep(0.05)
        return pd.DataFrame({"ms": [50.0], "t_start_unix_s": [start], "t_end_unix_s": [time.time()]})

    def operation() -> None:
        events.append(f"op inside={inside[0]}")
        time.sleep(0.01)

    return Workload(timed_reps, operation, lambda: None, active_idle=active_idle, region=region)


def _measure(active_idle: bool) -> tuple[Any, list[str], float]:
    events: list[str] = []
    prepared: list[float] = []

    def prepare() -> Workload:
        prepared.append(time.time())
        return _workload(events, active_idle)

    result = measure(CpuSource(_LinearRapl()), SETTINGS, prepare)  # type: ignore[arg-type]
    return result, events, prepared[0]


def test_the_harness_rests_a_prepared_workload_that_asks_for_it() -> None:
    result, events, prepared_at = _measure(active_idle=True)
    rest = result.active_idle["cpu"]
    reps_at = float(next(e for e in events if e.startswith("reps")).rsplit(" ", 1)[1])
    assert prepared_at <= rest.start_unix_s < rest.end_unix_s <= reps_at  # after prepare, before the reps
    # its 0.3 s, less at most what its edges' stamps shave off; under 5 s is generous, for a sleep that a
    # busy host wakes late from
    assert 0.25 <= rest.seconds < 5.0 and rest.method == "rapl"
    assert rest.power_w == pytest.approx(WATTS, rel=0.02)
    phases = result.trace.frame["phase"]
    assert {"idle", "active_idle", "reps", "energy"} <= set(phases)

    # the region is entered once around the reps and once around the energy window, with all inside
    assert events[0] == "enter" and events[-1] == "exit" and events.count("enter") == 2
    calls = [e for e in events if e.startswith(("reps", "op"))]
    assert calls and all("inside=True" in e for e in calls)

    summary = json.loads(json.dumps(result.summary()))  # as the sidecar holds it
    active = summary["active_idle"]["cpu"]
    assert {"power_w", "temperature_c", "seconds", "method", "start_unix_s", "end_unix_s"} <= set(active)
    energy = summary["energy"]["cpu"]
    assert energy["active_idle_power_w"] == pytest.approx(WATTS, rel=0.02)
    above = energy["energy_per_op_j"] - WATTS * energy["duration_s"] / energy["operations"]
    assert energy["energy_per_op_above_active_idle_j"] == pytest.approx(above, abs=0.02)
    medians = summary["window_medians"]["cpu"]
    assert set(medians) == {"idle", "active_idle", "energy"}
    assert set(medians["energy"]) == {"sm_clock_mhz", "memory_clock_mhz", "utilization_pct"}
    assert 0 <= medians["active_idle"]["utilization_pct"] <= 100


def test_other_workloads_keep_their_phases_and_time() -> None:
    result, events, _ = _measure(active_idle=False)
    assert "active_idle" not in set(result.trace.frame["phase"])
    summary = result.summary()
    assert summary["active_idle"] == {} and set(summary["window_medians"]["cpu"]) == {"idle", "energy"}
    assert math.isnan(summary["energy"]["cpu"]["active_idle_power_w"])
    assert math.isnan(summary["energy"]["cpu"]["energy_per_op_above_active_idle_j"])
    assert summary["energy"]["cpu"]["energy_per_op_above_idle_j"] == pytest.approx(0.0, abs=0.02)


def _counter_trace(times: np.ndarray, watts: np.ndarray, device: int = 0) -> pd.DataFrame:
    """A trace whose energy counter integrates `watts` (the power over each step to the next sample)."""
    energy = np.concatenate([[0.0], np.cumsum(watts[:-1] * np.diff(times))])
    return pd.DataFrame({"time_unix_s": times, "device": device, "energy_j": energy})


def test_subwindow_powers_interpolate_the_counter() -> None:
    times = np.round(np.arange(0, 5.01, 0.1), 6)
    trace = _counter_trace(times, np.full(len(times), 100.0))
    powers = subwindow_powers(trace, "0", 1.05, 3.3, 0.5)  # 2.25 s: four whole sub-windows
    assert powers.tolist() == pytest.approx([100.0] * 4)
    assert subwindow_powers(trace, "0", 1.0, 1.4, 0.5).size == 0  # shorter than one sub-window
    no_counter = trace.assign(energy_j=math.nan)
    assert subwindow_powers(no_counter, "0", 1.0, 3.0, 0.5).size == 0


def _raw_point(folder: Path) -> str:
    """A DeiT-B eager fp16 point at batch 4: idle 60 W (before the context), active idle 100 W over
    [1, 4] s, energy window [5, 15] s whose 0.5 s sub-windows draw 200 and 300 W in turn (250 W in the
    trace, 251 W as the counter read at the window's bounds saw it)."""
    stem = folder / "deit-b_b4_fp16_eager"
    blocks = pd.DataFrame(
        {
            "profile": "h100", "device": "0", "family": "deit", "model": "deit-b", "batch_size": 4,
            "precision": "fp16", "mode": "eager", "run": 1, "cast_protocol": "region_cached",
            "block": range(3), "runs": 100, "ms": [5.0, 5.0, 5.1], "parameters": 1,
            "output_max_abs_diff_vs_eager": 0.0, "status": "ok", "reason": "", "power_w_median": 250.0,
            "throttled": False, "clock_event_names": "",
        }
    )  # fmt: skip
    blocks.to_csv(f"{stem}.csv", index=False)
    times = np.round(np.arange(0, 16.01, 0.1), 6)
    watts = np.where(
        (times >= 5) & (times < 15), np.where(((times - 5) // 0.5) % 2 == 0, 200.0, 300.0), 100.0
    )
    trace = _counter_trace(times, watts).assign(phase="between", clock_event_reasons=0)
    trace.to_csv(f"{stem}.telemetry.csv", index=False)
    energy = {
        "start_unix_s": 5.0, "end_unix_s": 15.0, "duration_s": 10.0, "operations": 1000, "reliable": True,
        "avg_power_w": 251.0, "method": "nvml_energy_counter", "energy_per_op_j": 2.51,
        "energy_per_op_above_idle_j": 1.91, "energy_per_op_above_active_idle_j": 1.51,
    }  # fmt: skip
    medians = {
        window: {"sm_clock_mhz": sm, "memory_clock_mhz": 2619.0, "utilization_pct": util}
        for window, sm, util in (("idle", 345.0, 0.0), ("active_idle", 1980.0, 0.0), ("energy", 1755.0, 97.0))
    }
    measurement = {
        "idle": {"0": {"power_w": 60.0}},
        "active_idle": {
            "0": {"power_w": 100.0, "temperature_c": 40.0, "seconds": 3.0, "method": "nvml_energy_counter",
                  "start_unix_s": 1.0, "end_unix_s": 4.0}
        },
        "energy": {"0": energy},
        "window_medians": {"0": medians},
        "telemetry": {},
    }  # fmt: skip
    sidecar = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-x"}], "measurement": measurement}
    Path(f"{stem}.provenance.json").write_text(json.dumps(sidecar))
    return f"{stem}.csv"


def _value(table: pd.DataFrame, metric: str, statistic: str) -> pd.Series:
    return table[(table["metric"] == metric) & (table["statistic"] == statistic)].iloc[0]


def test_the_table_reports_power_and_energy_above_the_active_idle(tmp_path: Path) -> None:
    table = summarise([_raw_point(tmp_path)])
    assert set(table["cast_protocol"]) == {"region_cached"}
    expected = {
        ("active_idle_power", "value"): (100.0, "W"),
        ("power_above_active_idle", "mean"): (151.0, "W"),  # 251 W less 100 W
        ("power_above_idle", "mean"): (191.0, "W"),  # unchanged: against the idle before the context
        ("energy_per_inference", "above_active_idle"): (1.51, "J"),
        ("energy_per_sample", "above_active_idle"): (1.51 / 4, "J"),
        ("sm_clock", "idle_median"): (345.0, "MHz"),
        ("sm_clock", "active_idle_median"): (1980.0, "MHz"),
        ("sm_clock", "energy_window_median"): (1755.0, "MHz"),
        ("memory_clock", "energy_window_median"): (2619.0, "MHz"),
        ("gpu_utilization", "energy_window_median"): (97.0, "%"),
        ("gpu_utilization", "active_idle_median"): (0.0, "%"),
    }
    for (metric, statistic), (value, unit) in expected.items():
        row = _value(table, metric, statistic)
        assert (row["value"], row["unit"]) == (pytest.approx(value), unit), (metric, statistic)
    # 20 sub-windows of 200 and 300 W against 6 of 100 W: a mean difference of 150 W, its 95% interval
    # about 150 +- 1.96 * 50 / sqrt(20); moved by 1 W to hold the whole windows' 151 W
    low = _value(table, "power_above_active_idle", "ci_low")
    high = _value(table, "power_above_active_idle", "ci_high")
    assert low["unit"] == high["unit"] == "W"
    assert 126 < low["value"] < 151 - 15 and 151 + 15 < high["value"] < 176


def test_files_from_before_the_active_idle_still_aggregate(tmp_path: Path) -> None:
    old = _fake_point(tmp_path, "deit-b", "eager", "fp16", 1, 5.0, 0.5)  # no active idle, no medians
    new = _raw_point(tmp_path)
    table = summarise([old, new])
    rows = table[table["source_file"] == Path(old).name]
    assert rows["cast_protocol"].isna().all()
    for metric, statistic in [
        ("active_idle_power", "value"),
        ("power_above_active_idle", "mean"),
        ("power_above_active_idle", "ci_low"),
        ("energy_per_inference", "above_active_idle"),
        ("sm_clock", "energy_window_median"),
    ]:
        assert math.isnan(_value(rows, metric, statistic)["value"]), (metric, statistic)
    assert _value(rows, "power_above_idle", "mean")["value"] == 230.0


class _CastCounter(TorchDispatchMode):
    """Counts casts (aten::_to_copy) of the given tensors, as autocast makes them."""

    def __init__(self, tensors: list[torch.Tensor]) -> None:
        super().__init__()
        self.pointers = {t.data_ptr() for t in tensors}
        self.casts = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        if func is torch.ops.aten._to_copy.default and args[0].data_ptr() in self.pointers:
            self.casts += 1
        return func(*args, **(kwargs or {}))


def weight_casts(parameters: list[torch.Tensor], calls: Any) -> int:
    """Casts of `parameters` while `calls()` runs (also the GPU tests' counter)."""
    with _CastCounter(parameters) as counter:
        calls()
    return counter.casts


def _weight_casts(calls: Any) -> int:
    return weight_casts(list(NET.parameters()), calls)


torch.manual_seed(0)
NET = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()
X = torch.randn(3, 16)
LINEAR_PARAMETERS = 4  # two weights, two biases: what autocast casts for a matmul


def test_cast_protocols() -> None:
    assert [modes.cast_protocol(m, "fp16") for m in modes.MODES] == [
        "region_cached",
        "compiled",
        "cast_before_capture",
    ]
    assert {modes.cast_protocol(m, p) for m in modes.MODES for p in ("fp32", "tf32")} == {"none"}
    with pytest.raises(ValueError, match="mode must be one of"):
        modes.cast_protocol("tensorrt", "fp16")


def test_the_eager_region_casts_each_weight_once() -> None:
    run = modes.build_runner(NET, X, "eager", "bf16")
    assert run.cast_protocol == "region_cached"
    with torch.no_grad():
        uncached = modes.with_precision(NET, "bf16", "cpu")(X)  # a region per call, cache off
    with run.region():
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert _weight_casts(run) == LINEAR_PARAMETERS  # the first call in the region casts
        assert _weight_casts(lambda: [run() for _ in range(3)]) == 0  # the next ones reuse the casts
        inside = run()
    assert inside.dtype == torch.bfloat16 and torch.equal(inside, uncached)
    # a call on its own enters a region of its own: the same output, every weight cast again
    assert _weight_casts(lambda: [run(), run()]) == 2 * LINEAR_PARAMETERS
    assert torch.equal(run(), uncached) and not torch.is_autocast_enabled("cpu")


def test_fp32_runners_have_an_empty_region() -> None:
    run = modes.build_runner(NET, X, "eager", "fp32")
    with run.region():
        assert not torch.is_autocast_enabled("cpu") and run().dtype == torch.float32


def test_the_kept_cast_cache_outlives_the_capture_region_without_autocasting() -> None:
    """The cudagraph runner's memory safety, on the CPU: while _keep_cast_cache's region is open, the
    cast weights of a region inside it stay cached after that region ends (a graph captured there reads
    them), and nothing runs under autocast because of it; closing it drops them."""
    region = modes.autocast_region("bf16", "cpu")

    def in_a_region() -> None:
        with region(), torch.no_grad():
            NET(X)

    with ExitStack() as keeper:
        modes._keep_cast_cache(keeper, torch.device("cpu"))
        assert not torch.is_autocast_enabled("cpu")
        assert _weight_casts(in_a_region) == LINEAR_PARAMETERS  # warm-up: cast and cached
        assert not torch.is_autocast_enabled("cpu")
        assert _weight_casts(in_a_region) == 0  # "capture": reads the kept casts
        assert NET(X).dtype == torch.float32
    assert _weight_casts(in_a_region) == LINEAR_PARAMETERS  # closed: the cache went with it


def test_a_closed_runner_refuses_to_run() -> None:
    run = modes.build_runner(NET, X, "eager", "bf16")
    run.close()
    with pytest.raises(RuntimeError, match="runner is closed"):
        run()


class _CoolingRapl(CpuSource):
    """The linear RAPL counter on a device that is hot at first and cools 1 C a poll (never to its
    plateau within the wait), so the cool-down runs for cooldown_max_wait_s."""

    def __init__(self) -> None:
        super().__init__(_LinearRapl())  # type: ignore[arg-type]
        self.temp = 80.0

    def temperature_c(self) -> dict[str, float]:
        self.temp -= 1.0
        return {"cpu": self.temp}


def test_after_a_long_enough_cool_down_the_idle_baseline_is_its_tail() -> None:
    """The device rested with no context through the cool-down: its last idle_seconds are the baseline,
    not a second rest after it."""
    from dataclasses import replace

    prepared: list[float] = []

    def prepare() -> Workload:
        prepared.append(time.time())
        return _workload([], active_idle=False)

    result = measure(_CoolingRapl(), replace(SETTINGS, cooldown_max_wait_s=1.5), prepare)
    assert result.cooldown.status == "timeout" and result.cooldown.waited_s >= 1.5
    idle = result.idle["cpu"]
    assert idle.seconds == pytest.approx(SETTINGS.idle_seconds, abs=0.01) and idle.method == "rapl"
    assert idle.power_w == pytest.approx(WATTS, rel=0.05)  # read from the sampled counter
    assert idle.end_unix_s <= prepared[0]  # prepared after the tail; no rest after it: no "idle" phase below
    phases = set(result.trace.frame["phase"])
    assert "cooldown" in phases and "idle" not in phases
    # a device that needed no cool-down still rests for its own baseline
    short = measure(CpuSource(_LinearRapl()), SETTINGS, lambda: _workload([], active_idle=False))  # type: ignore[arg-type]
    assert "idle" in set(short.trace.frame["phase"]) and short.idle["cpu"].power_w == pytest.approx(
        WATTS, rel=0.05
    )


@pytest.mark.parametrize(
    ("settle_s", "max_wait_s", "settles", "tail"),
    [
        (0.6, 1.5, False, True),  # the cool-down outlasted the settle: no further wait, its tail is the idle
        (0.6, 0.0, True, False),  # no cool-down: the settle waits, then a baseline of its own
        (3.0, 1.5, True, False),  # the cool-down's tail lay inside the settle: a baseline of its own after it
    ],
)
def test_the_cool_down_counts_towards_the_settle(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settle_s: float,
    max_wait_s: float,
    settles: bool,
    tail: bool,
) -> None:
    """A measurement straight after another leaves the GPU alone for SETTLE_S since that one ended; the
    cool-down's wait counts towards them, and an idle baseline never opens inside them."""
    from dataclasses import replace

    import gpurepro.harness as harness
    from gpurepro.telemetry.cooldown import record_end

    monkeypatch.setattr(harness, "SETTLE_S", settle_s)
    device = _CoolingRapl()
    (tmp_path / "cpu.json").write_text(json.dumps({"idle_temperature_c": 20.0, "recorded_unix_s": 0.0}))
    record_end(device, tmp_path)  # the previous measurement ended just now
    ended = time.time()
    settings = replace(SETTINGS, cooldown_max_wait_s=max_wait_s, idle_temperature_dir=tmp_path)
    result = measure(device, settings, lambda: _workload([], active_idle=False))
    assert (result.cooldown.settled_s > 0.1) is settles
    assert ("idle" not in set(result.trace.frame["phase"])) is tail
    idle = result.idle["cpu"]
    assert idle.start_unix_s >= ended + settle_s - 0.05  # never inside the settle
    assert idle.power_w == pytest.approx(WATTS, rel=0.05)


class _WarmRapl(CpuSource):
    """The linear RAPL counter on a device that stays at 45 C, well above the idle temperature its run
    recorded: a card that levels off warmer once a run has warmed it."""

    def __init__(self) -> None:
        super().__init__(_LinearRapl())  # type: ignore[arg-type]

    def temperature_c(self) -> dict[str, float]:
        return {"cpu": 45.0}


def test_a_cool_down_that_levelled_off_ends_the_next_at_its_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first cool-down watches its plateau window and records where it levelled off; the next, on
    the same device in the same run, ends as soon as it reads that level."""
    from dataclasses import replace

    import gpurepro.harness as harness

    monkeypatch.setattr(harness, "PLATEAU_S", 0.2)
    monkeypatch.setattr(harness, "SETTLE_S", 0.1)
    (tmp_path / "cpu.json").write_text(json.dumps({"idle_temperature_c": 35.0, "recorded_unix_s": 0.0}))
    settings = replace(SETTINGS, cooldown_max_wait_s=30, idle_temperature_dir=tmp_path)
    first = measure(_WarmRapl(), settings, lambda: _workload([], active_idle=False))
    assert first.cooldown.status == "plateau" and first.cooldown.waited_s >= 0.2
    assert (tmp_path / "cpu.levels").read_text().split() == ["45.0"]
    second = measure(_WarmRapl(), settings, lambda: _workload([], active_idle=False))
    assert second.cooldown.status == "levelled" and second.cooldown.waited_s == 0.0
    assert second.cooldown.level_temp_c == 45.0 and second.cooldown.target_temp_c == 36.0
    assert (tmp_path / "cpu.levels").read_text().split() == ["45.0"]  # a levelled end records nothing
