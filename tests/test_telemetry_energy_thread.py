"""The sampling process's energy thread: a slow energy counter (NVML's takes up to 95 ms under load) is
read apart from the samples, so it delays none of them; its readings keep their own timestamps and are
interpolated into the rows at the rows' times, never counted as samples, never extrapolated.

No GPU here: a fake source whose counter takes 50 ms a read and rises linearly with time runs through
the worker's own sampling function, in this process, with a temporary spool file; so does NvmlSource
over NVML calls answered in Python."""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import IO, Any

import numpy as np
import pandas as pd
import pytest

from gpurepro.telemetry import SAMPLE_COLUMNS, CpuSource, NvmlSource, Trace
from gpurepro.telemetry.align import attach
from gpurepro.telemetry.process import read_spool, trace_from_report
from gpurepro.telemetry.sources import EnergyReading
from gpurepro.telemetry.spool import SpoolWriter
from gpurepro.telemetry.worker import sample

RATE_HZ = 50.0
READ_S = 0.05  # each device's energy read: half the energy interval, 2.5 sampling periods
WATTS = {"0": 100.0, "1": 250.0}  # each device's counter rises at this rate


class _SlowEnergySource:
    """Two devices whose rows are instant to read and whose energy counters take READ_S each, and read
    exactly WATTS * (t - t0) at the midpoint t of the read, so interpolation can be checked exactly."""

    kind = "fake"
    slow_energy_read = True

    def __init__(self, fail_after_readings: int | None = None) -> None:
        self.t0 = time.time()
        self.row_energy_requests: set[bool] = set()
        self.reader_threads: set[tuple[str, bool]] = set()
        self._fail_after = fail_after_readings
        self._readings = 0
        self._reading_energy = False  # a counter read is under way (in whichever thread)
        self.rows_during_energy_reads = 0  # rows read meanwhile: the samples did not wait for the counter

    def joules(self, device: str, time_unix_s: float) -> float:
        return WATTS[device] * (time_unix_s - self.t0)

    def devices(self) -> list[str]:
        return list(WATTS)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind}

    def read(self, energy: bool = True) -> list[dict[str, Any]]:
        self.row_energy_requests.add(energy)
        self.rows_during_energy_reads += self._reading_energy
        now = time.time()
        return [{**dict.fromkeys(SAMPLE_COLUMNS, math.nan), "time_unix_s": now, "device": d} for d in WATTS]

    def energy_readings(self) -> list[EnergyReading]:
        current = threading.current_thread()
        self.reader_threads.add((current.name, current.daemon))
        self._readings += 1
        if self._fail_after is not None and self._readings > self._fail_after:
            raise OSError("energy counter vanished")
        readings = []
        for device in WATTS:
            self._reading_energy = True
            began = time.time()
            time.sleep(READ_S)
            ended = time.time()
            self._reading_energy = False
            readings.append(EnergyReading(device, began, ended, self.joules(device, (began + ended) / 2)))
        return readings

    def energy_j(self) -> dict[str, float] | None:
        return {r.device: r.joules for r in self.energy_readings()}

    def temperature_c(self) -> dict[str, float]:
        return dict.fromkeys(WATTS, math.nan)

    def close(self) -> None:
        pass


@contextmanager
def _control_pipe(close_after_s: float) -> Iterator[int]:
    """The read end of a control pipe whose write end closes after close_after_s: the worker's signal
    to stop, as the parent's stop() gives it."""
    read_end, write_end = os.pipe()
    closed = threading.Event()

    def close() -> None:
        os.close(write_end)
        closed.set()

    closer = threading.Timer(close_after_s, close)
    closer.start()
    try:
        yield read_end
    finally:
        closer.cancel()
        closer.join()
        if not closed.is_set():
            os.close(write_end)
        os.close(read_end)


def _sample_for(
    source: _SlowEnergySource, seconds: float, spool: IO[bytes]
) -> tuple[dict[str, Any], pd.DataFrame]:
    with _control_pipe(seconds) as control:
        report = sample(source, RATE_HZ, spool, os.getppid(), control)
    return report, read_spool(spool, source.devices())


def test_a_slow_energy_counter_delays_no_sample() -> None:
    source = _SlowEnergySource()
    with tempfile.TemporaryFile() as spool:
        report, frame = _sample_for(source, 2.0, spool)
    assert report["error"] is None
    trace = trace_from_report(frame, report, RATE_HZ, 0.0)
    assert source.row_energy_requests == {False}  # the sampling loop never reads the counter
    assert source.reader_threads == {("MainThread", False), ("gpurepro-energy", True)}  # first, then all
    assert not any(t.name == "gpurepro-energy" for t in threading.enumerate())  # stopped and joined
    # No sample waited for the counter: rows were read while a counter read was under way, which a
    # sampling loop that waits for the counter never does. Counted, not timed: a busy host may wake the
    # sampler late, drop samples and stretch any one read, so neither the rate nor a read's time is judged.
    assert source.rows_during_energy_reads > 0, trace.describe()
    assert trace.achieved_rate_hz <= RATE_HZ
    # reads of both devices back to back (0.1 s each, longer when the host is busy), one before the
    # samples and one after: never more than 2 s allow
    assert 3 <= trace.energy_readings <= 23
    assert trace.slowest_energy_read_s >= READ_S
    assert trace.describe()["sampler_energy_readings"] == trace.energy_readings
    assert trace.describe()["sampler_slowest_energy_read_s"] == trace.slowest_energy_read_s


def test_energy_readings_are_interpolated_at_the_rows_and_are_no_samples() -> None:
    source = _SlowEnergySource()
    with tempfile.TemporaryFile() as spool:
        report, frame = _sample_for(source, 1.0, spool)
    assert list(frame.columns) == SAMPLE_COLUMNS
    assert len(frame) == len(WATTS) * report["samples"]  # one row per device per sample, nothing else
    for device in WATTS:
        rows = frame[frame["device"] == device]
        assert rows["time_unix_s"].is_monotonic_increasing
        # a reading before the first sample and one after the last: every row lies inside their span;
        # the counter is linear in time, so interpolation at a row's time gives its exact value
        expected = source.joules(device, rows["time_unix_s"].to_numpy())
        np.testing.assert_allclose(rows["energy_j"].to_numpy(), expected, rtol=0, atol=1e-6)
    trace = trace_from_report(frame, report, RATE_HZ, 0.0)
    whole = pd.DataFrame({"t_start_unix_s": [trace.start_unix_s], "t_end_unix_s": [trace.end_unix_s]})
    counted = attach(whole, frame[frame["device"] == "0"])["telemetry_samples"].iloc[0]
    assert counted == report["samples"]


def test_rows_outside_the_readings_span_have_no_energy() -> None:
    with tempfile.TemporaryFile() as spool:
        writer = SpoolWriter(spool)
        for t in (0.0, 1.0, 2.0, 3.0):  # device 0's rows; its readings span only 1 to 2
            writer.sample({**dict.fromkeys(SAMPLE_COLUMNS, math.nan), "time_unix_s": t}, 0)
        writer.sample({**dict.fromkeys(SAMPLE_COLUMNS, math.nan), "time_unix_s": 1.5, "energy_j": 7.0}, 1)
        writer.energy(EnergyReading("0", 1.9, 2.1, 30.0), 0)  # written out of order, and stamped
        writer.energy(EnergyReading("0", 0.8, 1.2, 10.0), 0)  # at the middle of the read
        writer.energy(EnergyReading("0", 2.5, 2.5, math.nan), 0)  # a device without a counter
        writer.flush()
        frame = read_spool(spool, ["0", "1"])
    assert len(frame) == 5 and frame["device"].tolist() == ["0", "0", "0", "0", "1"]
    energy = frame["energy_j"].tolist()
    assert math.isnan(energy[0]) and math.isnan(energy[3])  # before and after the readings: never guessed
    assert energy[1:3] == [10.0, 30.0]
    assert energy[4] == 7.0  # no readings of device 1: its rows keep the energy they were sampled with


def test_a_failing_energy_thread_ends_sampling_and_is_reported() -> None:
    source = _SlowEnergySource(fail_after_readings=3)
    began = time.monotonic()
    with tempfile.TemporaryFile() as spool:
        report, _ = _sample_for(source, 120.0, spool)
    assert report["error"] == "OSError: energy counter vanished"
    # It did not sample on until told to stop: the failure comes after 3 readings, about 0.3 s; the
    # bound is a generous 60 s (a host's speed is not judged), half the time it was told to sample.
    assert time.monotonic() - began < 60.0
    assert not any(t.name == "gpurepro-energy" for t in threading.enumerate())


def test_a_failing_first_energy_read_fails_start() -> None:
    with tempfile.TemporaryFile() as spool:
        report, frame = _sample_for(_SlowEnergySource(fail_after_readings=0), 5.0, spool)
    assert report["error"] == "OSError: energy counter vanished" and report["samples"] == 0
    assert frame.empty


def test_a_cheap_energy_counter_stays_in_the_rows() -> None:
    source = CpuSource()
    assert not source.slow_energy_read
    assert math.isnan(source.read(energy=False)[0]["energy_j"])
    with tempfile.TemporaryFile() as spool:
        with _control_pipe(0.3) as control:
            report = sample(source, RATE_HZ, spool, os.getppid(), control)
        frame = read_spool(spool, source.devices())
    assert report["error"] is None and report["energy_readings"] == 0
    assert len(frame) == report["samples"]
    if source.rapl.available:
        assert frame["energy_j"].notna().all()


def test_old_callers_of_trace_get_the_energy_fields_defaulted() -> None:
    trace = Trace(pd.DataFrame(columns=SAMPLE_COLUMNS), 50.0, 0.0, 1.0, "thread", 0, 0.0)
    assert trace.energy_readings == 0 and trace.slowest_energy_read_s == 0.0


class _FakeNvml:
    """NVML's calls for two GPUs, answered in Python: every reading instant except the energy counter,
    which takes READ_S and rises at WATTS; the threads that read it are recorded."""

    def __init__(self) -> None:
        self.t0 = time.time()
        self.energy_threads: list[str] = []
        self._reading_energy = False  # a counter read is under way
        self.rows_during_energy_reads = 0  # power read meanwhile: the rows did not wait for the counter

    def power_mw(self, h: str) -> int:
        self.rows_during_energy_reads += self._reading_energy
        return round(1000 * WATTS[h])

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from gpurepro import nvml

        pynvml = nvml.pynvml
        not_supported = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

        def refuse(*_args: Any) -> None:
            raise not_supported

        answers = {
            "nvmlInit": lambda: None,
            "nvmlShutdown": lambda: None,
            "nvmlDeviceGetCount": lambda: len(WATTS),
            "nvmlDeviceGetHandleByIndex": str,  # a GPU's handle is its device name
            "nvmlDeviceGetFieldValues": refuse,  # pre-Ampere: power falls back to GetPowerUsage
            "nvmlDeviceGetPowerUsage": self.power_mw,
            "nvmlDeviceGetUtilizationRates": lambda h: SimpleNamespace(gpu=50, memory=20),
            "nvmlDeviceGetClockInfo": lambda h, clock: 1980,
            "nvmlDeviceGetTemperature": lambda h, sensor: 40,
            "nvmlDeviceGetCurrentClocksEventReasons": lambda h: 0,
            "nvmlDeviceGetTotalEnergyConsumption": self.energy_mj,
        }
        for name, answer in answers.items():
            monkeypatch.setattr(pynvml, name, answer)

    def energy_mj(self, h: str) -> int:
        self.energy_threads.append(threading.current_thread().name)
        self._reading_energy = True
        began = time.time()
        time.sleep(READ_S)
        ended = time.time()
        self._reading_energy = False
        # the counter at the middle of the call, as NvmlSource stamps it: the middle of the two sleeps
        # would move with how late a busy host wakes from each
        return round(1000 * WATTS[h] * ((began + ended) / 2 - self.t0))


def test_nvml_reads_its_energy_counter_in_a_thread_of_the_sampling_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _FakeNvml()
    fake.install(monkeypatch)
    source = NvmlSource([0, 1])
    assert source.slow_energy_read
    with tempfile.TemporaryFile() as spool:
        with _control_pipe(1.0) as control:
            report = sample(source, RATE_HZ, spool, os.getppid(), control)
        frame = read_spool(spool, source.devices())
    assert report["error"] is None
    assert fake.rows_during_energy_reads > 0  # rows were read during counter reads: they never waited
    assert set(fake.energy_threads) == {"MainThread", "gpurepro-energy"}  # the first reading, then all
    assert fake.energy_threads.count("MainThread") == len(WATTS)
    for device, watts in WATTS.items():
        rows = frame[frame["device"] == device]
        assert (rows["power_w"] == watts).all()
        # stamped at the middle of each read: the interpolated counter is right to a millisecond's energy
        expected = watts * (rows["time_unix_s"].to_numpy() - fake.t0)
        np.testing.assert_allclose(rows["energy_j"].to_numpy(), expected, rtol=0, atol=watts * 2e-3)


def test_nvml_read_keeps_its_throttled_energy_for_the_thread_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNvml()
    fake.install(monkeypatch)
    source = NvmlSource([0])
    assert not math.isnan(source.read()[0]["energy_j"])  # the thread sampler's read: energy is due
    assert math.isnan(source.read()[0]["energy_j"])  # read again within ENERGY_READ_INTERVAL_S
    assert math.isnan(source.read(energy=False)[0]["energy_j"])
    assert len(fake.energy_threads) == 1
    reading = source.energy_readings()[0]
    assert reading.device == "0" and reading.seconds >= READ_S
    assert reading.joules == pytest.approx(WATTS["0"] * (reading.time_unix_s - fake.t0), abs=0.5)
    assert source.energy_j() == {"0": pytest.approx(reading.joules, abs=WATTS["0"] * 0.2)}
