"""Telemetry: the samplers' rate and columns on a real source, errors surfacing, RAPL accounting across a
counter wrap, energy windows, idle baselines and the cool-down rule. The sampling process itself (its
start, shutdown and death with its parent) is tested in test_telemetry_process.py."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpurepro.harness import run_energy_window
from gpurepro.telemetry import (
    COOLDOWN_MARGIN_C,
    SAMPLE_COLUMNS,
    SAMPLERS,
    CooldownResult,
    CpuSource,
    EnergyMeter,
    EnergyWindow,
    ThreadSampler,
    busy,
    cooldown_levels,
    forget_levels,
    idle_temperatures,
    measure_idle,
    open_sampler,
    record_end,
    record_level,
    settle,
    wait_for_cooldown,
)
from gpurepro.telemetry.align import attach
from gpurepro.telemetry.rapl import RaplMeter

from .conftest import needs_gpu


@pytest.mark.parametrize("kind", SAMPLERS)
def test_cpu_sampler_reaches_its_rate_with_all_columns(kind: str) -> None:
    with open_sampler(CpuSource(), rate_hz=100, kind=kind) as sampler:
        time.sleep(1.0)
    trace = sampler.trace
    assert trace.sampler == kind
    assert list(trace.frame.columns) == SAMPLE_COLUMNS
    assert set(trace.frame["device"]) == {"cpu"}
    # How many deadlines get a sample depends on how busy the host is (Deadlines' own tests hold the rate
    # on a clock of their own); what holds on any host: never more samples than deadlines, and every
    # deadline either sampled or counted as dropped, a drop only where a sample came a period late.
    assert 0 < trace.achieved_rate_hz <= 100
    duration = trace.end_unix_s - trace.start_unix_s
    assert abs(len(trace.frame) + trace.dropped_samples - 100 * duration) <= 3  # every deadline accounted
    assert trace.dropped_samples == 0 or trace.latest_wake_s + trace.slowest_read_s >= 0.01
    assert trace.frame["time_unix_s"].is_monotonic_increasing
    assert trace.frame["util_pct"].between(0, 100).all()


class _FailingSource(CpuSource):
    def read(self, energy: bool = True):
        raise OSError("sensor vanished")


def test_thread_sampler_reports_a_failing_source() -> None:
    sampler = ThreadSampler(_FailingSource(), rate_hz=50)
    sampler.start()
    time.sleep(0.05)
    with pytest.raises(RuntimeError, match="telemetry sampling failed: sensor vanished"):
        sampler.stop()
    with pytest.raises(ValueError, match="rate_hz must be positive"):
        open_sampler(CpuSource(), rate_hz=0)
    with pytest.raises(ValueError, match="sampler must be one of process, thread"):
        open_sampler(CpuSource(), rate_hz=50, kind="fibre")


def _rapl_tree(root: Path, energy_uj: int, max_uj: int = 1_000_000) -> Path:
    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True, exist_ok=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{max_uj}\n")
    sub = root / "intel-rapl:0:0"  # a core sub-zone: must not be counted twice
    sub.mkdir(exist_ok=True)
    (sub / "energy_uj").write_text("5\n")
    (sub / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return zone


def test_rapl_meter_accumulates_across_a_wrap(tmp_path: Path) -> None:
    zone = _rapl_tree(tmp_path, energy_uj=900_000)
    meter = RaplMeter(tmp_path)
    assert meter.available
    (zone / "energy_uj").write_text("950000\n")
    assert meter.joules() == pytest.approx(0.05)
    (zone / "energy_uj").write_text("100000\n")  # wrapped at 1 J: 0.05 J to the top, then 0.1 J
    assert meter.joules() == pytest.approx(0.2)


def test_rapl_absent_says_why(tmp_path: Path) -> None:
    meter = RaplMeter(tmp_path / "nothing")
    assert not meter.available
    assert "does not exist" in meter.why_unavailable()


def test_energy_windows_from_rapl_and_unavailable(tmp_path: Path) -> None:
    zone = _rapl_tree(tmp_path, energy_uj=0, max_uj=10**12)
    source = CpuSource(RaplMeter(tmp_path))
    meter = EnergyMeter(source, min_window_s=0.05)
    meter.begin_window("w")
    (zone / "energy_uj").write_text("3000000\n")  # 3 J
    time.sleep(0.1)
    window = meter.end_window("w")["cpu"]
    assert window.method == "rapl" and window.reliable
    assert window.energy_j == pytest.approx(3.0)
    assert window.avg_power_w == pytest.approx(3.0 / window.duration_s)

    short = EnergyMeter(source, min_window_s=10)
    short.begin_window("s")
    assert not short.end_window("s")["cpu"].reliable

    none = EnergyMeter(CpuSource(RaplMeter(tmp_path / "none")))
    none.begin_window("n")
    window = none.end_window("n")["cpu"]
    assert window.method == "unavailable" and math.isnan(window.energy_j)
    assert "RAPL" in window.note


class _HostClock:
    """The clock the energy meter reads, standing in for the host's: each reading costs `read_s` (a busy
    host spaces the meter's reads out) and sleeping moves it on. The windows' edges then come out the same
    however loaded the machine running the tests is, and the bounds below follow from `read_s` alone."""

    def __init__(self, read_s: float) -> None:
        self.now, self.read_s = 1_000_000.037, read_s  # between two of the counter's updates

    def time(self) -> float:
        self.now += self.read_s
        return self.now

    perf_counter = time

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=[0.0005, 0.01], ids=["idle_host", "busy_host"])
def host_clock(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> _HostClock:
    """The energy meter and the harness on a host whose reads take 0.5 ms, or 10 ms."""
    clock = _HostClock(read_s=request.param)
    monkeypatch.setattr("gpurepro.telemetry.energy.time", clock)
    monkeypatch.setattr("gpurepro.harness.time", clock)
    return clock


class _SteppedCounter:
    """A source whose energy counter, like NVML's, holds its value between updates every `period_s`: a
    device drawing `watts` throughout, on the host's clock."""

    kind = "nvml"
    slow_energy_read = False

    def __init__(
        self, clock: _HostClock, watts: float, period_s: float = 0.1, phases: tuple[float, ...] = (0.0,)
    ) -> None:
        # one device per phase
        self.clock, self.watts, self.period_s, self.phases = clock, watts, period_s, phases

    def devices(self) -> list[str]:
        return [str(i) for i in range(len(self.phases))]

    def energy_j(self) -> dict[str, float]:
        return {
            str(i): math.floor((self.clock.now + phase) / self.period_s) * self.period_s * self.watts
            for i, phase in enumerate(self.phases)
        }


def read_spacing_s(clock: _HostClock) -> float:
    """The most time between two of the meter's reads while it waits for an update (one check of its
    deadline, one read): an edge is taken halfway between the reads around the update, so within this of
    it, and a window's length within twice this of a whole number of updates."""
    return 2 * clock.read_s


def assert_edges_on_updates(window: EnergyWindow, clock: _HostClock, period_s: float = 0.1) -> None:
    """The window spans a whole number of the counter's update periods, within its edges' error."""
    updates = round(window.duration_s / period_s)
    assert window.duration_s == pytest.approx(updates * period_s, abs=2 * read_spacing_s(clock))


def test_an_energy_window_opens_and_closes_at_updates_of_the_counter(host_clock: _HostClock) -> None:
    """A window read at the instants it opens and closes counts a whole update more or less than its
    wall time holds (+-20% over 0.5 s here; +3.3% over 3 s gave inference processes on H100s 4-5 W
    too much): each edge waits for the counter to change, so power comes out as drawn, whatever the
    window's overrun."""
    meter = EnergyMeter(_SteppedCounter(host_clock, watts=125.0), min_window_s=0.4)  # type: ignore[arg-type]
    for overrun in (0.0, 0.013, 0.037, 0.061, 0.089):
        meter.begin_window("w")
        host_clock.sleep(0.45 + overrun)
        window = meter.end_window("w")["0"]
        # off by no more than the edges' error: 4% on the busy host, where a whole update more or less
        # would be 20%
        error = 2 * read_spacing_s(host_clock) / window.duration_s
        assert window.avg_power_w == pytest.approx(125.0, rel=error), overrun
        assert window.duration_s >= 0.45 + overrun
        assert_edges_on_updates(window, host_clock)


def test_each_device_s_window_is_aligned_to_its_own_counter(host_clock: _HostClock) -> None:
    """Two GPUs' counters update on their own, out of phase: each window takes its own device's updates."""
    counters = _SteppedCounter(host_clock, watts=70.0, phases=(0.0, 0.043))
    meter = EnergyMeter(counters, min_window_s=0.4)  # type: ignore[arg-type]
    meter.begin_window("idle")
    host_clock.sleep(0.47)
    windows = meter.end_window("idle")
    assert set(windows) == {"0", "1"}
    for window in windows.values():
        error = 2 * read_spacing_s(host_clock) / window.duration_s
        assert window.avg_power_w == pytest.approx(70.0, rel=error)
        assert_edges_on_updates(window, host_clock)
    # their own instants: device 1's counter updates 43 ms before device 0's
    skew = windows["0"].start_unix_s - windows["1"].start_unix_s
    assert skew == pytest.approx(0.043, abs=2 * read_spacing_s(host_clock))


def test_the_energy_window_keeps_the_device_at_work_until_the_counter_closes_it(
    host_clock: _HostClock,
) -> None:
    """Past its seconds the operations go on until the counter's next update, and are counted."""
    meter = EnergyMeter(_SteppedCounter(host_clock, watts=300.0), min_window_s=0.5)  # type: ignore[arg-type]
    for seconds in (0.004, 0.011, 0.023):  # operations of several lengths: closes at several phases
        ran: list[float] = []

        def operation(seconds: float = seconds, ran: list[float] = ran) -> None:
            host_clock.sleep(seconds)
            ran.append(host_clock.now)

        windows, operations = run_energy_window(meter, operation, lambda: None, min_seconds=0.5)
        window = windows["0"]
        assert operations == len(ran) and ran[-1] >= window.end_unix_s - seconds
        # the close is taken halfway between the two reads around the update, an operation apart: the
        # window is off by up to one operation and the reads around it
        closing = seconds + read_spacing_s(host_clock)
        assert window.avg_power_w == pytest.approx(300.0, rel=(closing + read_spacing_s(host_clock)) / 0.5)
        assert window.duration_s >= 0.5


def test_idle_baseline_uses_the_energy_counter(tmp_path: Path) -> None:
    _rapl_tree(tmp_path, energy_uj=0, max_uj=10**12)
    idle = measure_idle(CpuSource(RaplMeter(tmp_path)), seconds=0.2, rate_hz=50)["cpu"]
    assert idle.method == "rapl" and idle.power_w == 0.0  # the counter did not move
    idle = measure_idle(CpuSource(RaplMeter(tmp_path / "none")), seconds=0.2, rate_hz=50)["cpu"]
    assert idle.method == "median_of_samples"


class _CoolingDevice(CpuSource):
    """A device whose temperature falls 2 C per poll towards 40 C (no hardware here cools on cue)."""

    def __init__(self, start_c: float, floor_c: float = 40.0) -> None:
        super().__init__()
        self.temp, self.floor = start_c, floor_c

    def temperature_c(self):
        reading = self.temp
        self.temp = max(self.floor, self.temp - 2)
        return {"cpu": reading}


def test_cooldown_to_target_plateau_and_timeout() -> None:
    no_sleep = lambda _s: None  # noqa: E731 - the device cools per poll, not per second
    reached = wait_for_cooldown(_CoolingDevice(60), max_wait_s=60, target_temp_c=50, poll_s=0, sleep=no_sleep)
    assert reached.status == "reached" and reached.end_temp_c <= 50
    plateau = wait_for_cooldown(
        _CoolingDevice(46), max_wait_s=5, plateau_s=0.01, poll_s=0.005, sleep=time.sleep
    )
    assert plateau.status == "plateau" and plateau.end_temp_c == 40
    timeout = wait_for_cooldown(
        _CoolingDevice(90, floor_c=90), max_wait_s=0.05, target_temp_c=50, poll_s=0.01, sleep=time.sleep
    )
    assert timeout.status == "timeout"
    # no wait asked (a quick run's studies without cool-downs): said as such, not as a wait cut short
    waits: list[float] = []
    hot = _CoolingDevice(90, floor_c=90)
    off = wait_for_cooldown(hot, max_wait_s=0, target_temp_c=50, sleep=waits.append)
    assert off.status == "off" and off.waited_s == 0 and waits == []
    unknown = wait_for_cooldown(CpuSource(), max_wait_s=10, sleep=no_sleep)
    if math.isnan(unknown.start_temp_c):
        assert unknown.status == "no_temperature"


class _Counted(_CoolingDevice):
    """A cooling device that counts its polls (the first reading included)."""

    def __init__(self, start_c: float, floor_c: float = 40.0) -> None:
        super().__init__(start_c, floor_c)
        self.polls = 0

    def temperature_c(self):
        self.polls += 1
        return super().temperature_c()


def test_the_idle_temperature_is_recorded_once_per_gpu(tmp_path: Path) -> None:
    """The first measurement on a GPU records its temperature; later ones read that, not their own."""
    first = idle_temperatures(_CoolingDevice(35.0), tmp_path / "cooldown")
    later = idle_temperatures(_CoolingDevice(61.0), tmp_path / "cooldown")
    assert first == later == {"cpu": 35.0}
    assert [p.name for p in (tmp_path / "cooldown").iterdir()] == ["cpu.json"]
    assert idle_temperatures(_CoolingDevice(61.0), None) == {}


def test_a_gpu_at_its_idle_temperature_is_not_kept_waiting() -> None:
    """Within the margin of its recorded idle: no wait at all (the old plateau rule waited 10 s)."""
    waits: list[float] = []
    device = _Counted(36.0)
    result = wait_for_cooldown(device, max_wait_s=120, target_temp_c={"cpu": 36.0 + COOLDOWN_MARGIN_C},
                               sleep=waits.append)  # fmt: skip
    assert result.status == "reached" and result.waited_s == 0.0 and waits == [] and device.polls == 1


def test_a_hot_gpu_waits_for_its_idle_temperature_or_a_plateau_whichever_first() -> None:
    no_sleep = lambda _s: None  # noqa: E731
    reached = wait_for_cooldown(_CoolingDevice(60), 60, {"cpu": 51.0}, poll_s=0, sleep=no_sleep)
    assert reached.status == "reached" and reached.end_temp_c <= 51 and reached.target_temp_c == 51.0
    # the floor (40 C) is above the recorded idle (35 C): the temperature settles, and the wait ends there
    plateau = wait_for_cooldown(_CoolingDevice(44), 5, {"cpu": 36.0}, plateau_s=0.01, poll_s=0.005)
    assert plateau.status == "plateau" and plateau.end_temp_c == 40


def test_a_gpu_that_levelled_off_before_ends_its_cool_down_at_that_level() -> None:
    """A card whose earlier cool-downs levelled off above its target ends the next at that level, as
    soon as it reaches it, rather than watching the plateau window there again; a level at or below
    the target changes nothing."""
    no_sleep = lambda _s: None  # noqa: E731
    plateau = wait_for_cooldown(_CoolingDevice(50, floor_c=44), 5, {"cpu": 36.0}, plateau_s=0.01,
                                poll_s=0.005)  # fmt: skip
    assert plateau.status == "plateau" and plateau.end_temps_c == {"cpu": 44.0}
    polls = _Counted(60, floor_c=44)
    levelled = wait_for_cooldown(polls, 60, {"cpu": 36.0}, plateau_s=3.0, poll_s=1.0, sleep=no_sleep,
                                 level_temp_c={"cpu": 44.0})  # fmt: skip
    assert levelled.status == "levelled" and levelled.end_temp_c == 44.0 and levelled.level_temp_c == 44.0
    assert polls.polls == 9  # 60, 58, ..., 44: it ended at its first reading of the level
    below = wait_for_cooldown(_CoolingDevice(60), 60, {"cpu": 51.0}, poll_s=0, sleep=no_sleep,
                              level_temp_c={"cpu": 50.0})  # fmt: skip
    assert below.status == "reached" and below.level_temp_c is None


def test_the_level_is_the_latest_plateau_above_the_target(tmp_path: Path) -> None:
    """Only a plateau above a device's target is recorded; the level is the latest."""
    device, folder = _CoolingDevice(60.0), tmp_path / "cooldown"
    assert cooldown_levels(device, folder) == {} and cooldown_levels(device, None) == {}
    for status, temperature in (("plateau", 39.0), ("levelled", 41.0), ("plateau", 38.0),
                                ("plateau", 36.5), ("timeout", 45.0), ("plateau", 40.0)):  # fmt: skip
        ended = CooldownResult(status, 10.0, 50.0, temperature, 37.0, None, {"cpu": temperature})
        record_level(device, folder, ended, {"cpu": 37.0})
    assert (folder / "cpu.levels").read_text().split() == ["39.0", "38.0", "40.0"]
    assert cooldown_levels(device, folder) == {"cpu": 40.0}
    record_level(device, folder, CooldownResult("plateau", 10.0, 50.0, 38.5, 37.0, None, {"cpu": 38.5}), {})
    assert cooldown_levels(device, folder) == {"cpu": 38.5}  # a later, cooler plateau: the level follows
    (folder / "cpu.json").write_text("{}")
    forget_levels(folder)  # a new run learns its own levels; the recorded idle temperature stays
    assert cooldown_levels(device, folder) == {} and [p.name for p in folder.iterdir()] == ["cpu.json"]
    forget_levels(tmp_path / "none")  # no folder yet: nothing to forget


def test_attach_matches_samples_to_reps() -> None:
    samples = pd.DataFrame(
        {
            "time_unix_s": [0.0, 0.5, 1.0, 1.5, 2.0],
            "device": "0",
            "power_w": [100, 200, 300, 400, 500],
            "sm_clock_mhz": [1000, 1900, 1900, 1800, 1000],
            "mem_clock_mhz": 1000,
            "temperature_c": [40, 50, 60, 70, 80],
            "util_pct": 100,
            "clock_event_reasons": [0, 0, 4, 0, 0x20],
            "energy_j": [0.0, 50.0, 100.0, 150.0, 200.0],
        }
    )
    reps = pd.DataFrame(
        {"rep": [0, 1, 2], "t_start_unix_s": [0.4, 1.4, 1.8], "t_end_unix_s": [1.45, 1.6, 1.85]}
    )
    out = attach(reps, samples)
    assert out["power_w_median"].tolist() == [250, 400, 500]
    assert out["telemetry_samples"].tolist() == [2, 1, 0]  # rep 2 fell between samples: nearest is used
    assert out["throttled"].tolist() == [True, False, True]
    assert out.loc[0, "clock_event_names"] == "sw_power_cap"
    assert out.loc[2, "clock_event_names"] == "sw_thermal_slowdown"
    assert out["energy_j"].iloc[0] == pytest.approx(105.0)  # 1.05 s on a counter rising 100 J/s
    assert out["energy_j"].iloc[1:].isna().all()  # reps under a second: the counter is too coarse


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("kind", SAMPLERS)
def test_nvml_sampler_on_a_real_gpu(kind: str) -> None:
    from gpurepro.telemetry import NvmlSource

    source = NvmlSource([0])
    try:
        with open_sampler(source, rate_hz=50, kind=kind) as sampler:
            time.sleep(2)
        meter = EnergyMeter(source, min_window_s=1)
        meter.begin_window("w")
        time.sleep(1.5)
        window = meter.end_window("w")["0"]
    finally:
        source.close()
    trace = sampler.trace
    frame = trace.frame
    # Counted, not timed (a busy host wakes the sampler late, and how late is the host's doing): every
    # deadline of the 2 s at 50 Hz was sampled or counted as dropped, never more samples than deadlines
    duration = trace.end_unix_s - trace.start_unix_s
    assert 0 < trace.achieved_rate_hz <= 50
    assert abs(len(frame) + trace.dropped_samples - 50 * duration) <= 3
    assert set(frame["device"]) == {"0"}
    assert frame["power_w"].gt(0).all() and frame["sm_clock_mhz"].gt(0).all()
    # the slow energy counter is read at most every 0.1 s, not with every sample, and never goes back
    energy = frame["energy_j"].dropna()
    assert energy.is_monotonic_increasing
    if kind == "process":  # by a thread of its own, from before the first sample to after the last
        assert len(energy) == len(frame) and 2 <= trace.energy_readings <= 10 * duration + 3
        assert 0 < trace.slowest_energy_read_s < 1  # a generous bound: NVML answers in under 0.1 s
    else:  # with a sample, at most every 0.1 s
        assert 1 <= len(energy) <= 10 * duration + 2 and trace.energy_readings == 0
    assert window.method == "nvml_energy_counter" and 10 < window.avg_power_w < 2000


def test_external_workload_reruns_to_span_the_energy_window() -> None:
    from gpurepro.harness import Workload, _reps_spanning

    def reps_of(count: int, ms: float) -> pd.DataFrame:
        start = np.arange(count) * ms / 1e3
        return pd.DataFrame({"ms": ms, "t_start_unix_s": start, "t_end_unix_s": start + ms / 1e3})

    asked: list[int] = []

    def energy_reps(count: int) -> pd.DataFrame:
        asked.append(count)
        return reps_of(count, 20.0)

    workload = Workload(lambda: reps_of(10, 20.0), None, lambda: None, energy_reps)
    long_enough = reps_of(200, 20.0)  # 4 s of reps already span a 3 s window
    assert _reps_spanning(workload, long_enough, 3.0) is long_enough and asked == []
    spanning = _reps_spanning(workload, reps_of(10, 20.0), 3.0)
    assert asked == [180] and len(spanning) == 180  # 3 s / 20 ms, with 20% to spare


def test_a_measurement_leaves_the_gpu_alone_for_a_moment_after_the_last_one_ended(tmp_path: Path) -> None:
    """The driver keeps a GPU's clocks up for a second after its last context goes: the next measurement
    waits until SETTLE_S have passed since the previous one ended, and not at all when they have."""
    device = _CoolingDevice(35.0)
    waits: list[float] = []
    assert settle(device, tmp_path, settle_s=4.0, sleep=waits.append) == 0.0 and waits == []  # first
    record_end(device, tmp_path)
    waited = settle(device, tmp_path, settle_s=4.0, sleep=waits.append)
    assert 3.5 < waited <= 4.0 and waits == [waited]
    (tmp_path / "cpu.ended").write_text(repr(time.time() - 10))  # ended long ago
    assert settle(device, tmp_path, settle_s=4.0, sleep=waits.append) == 0.0 and len(waits) == 1
    assert settle(device, None) == 0.0


def test_gpu_work_that_is_no_measurement_makes_the_next_measurement_settle(tmp_path: Path) -> None:
    """Training and the reference rates record their end as a measurement does, failed or not, so an idle
    baseline straight after them waits for the GPU's clocks to come down; on the CPU nothing is recorded."""
    device = _CoolingDevice(35.0)
    opened: list[list[int]] = []

    def opener(gpus: list[int]) -> _CoolingDevice:
        opened.append(gpus)
        return device

    with busy([], tmp_path, opener=opener):
        pass
    assert opened == [] and settle(device, tmp_path, settle_s=4.0, sleep=lambda s: None) == 0.0
    with pytest.raises(RuntimeError), busy([1], tmp_path, opener=opener):
        raise RuntimeError("a rank failed")
    assert opened == [[1]]
    assert 3.5 < settle(device, tmp_path, settle_s=4.0, sleep=lambda s: None) <= 4.0
