"""Wait for a device to cool down before a measurement, so runs start from comparable thermal states.

As the SC22 study did, the wait ends when each device is within COOLDOWN_MARGIN_C of the idle temperature
recorded for it at the start of the run (the first measurement on a GPU records it: idle_temperatures),
or when its temperature stops falling (a plateau), whichever comes first, and at once when it already
is: a GPU at its idle temperature has no heat to lose, and waiting for a plateau there only costs the
reviewer time. Without a recorded temperature the wait ends at a plateau.

Many cards never get back to the idle temperature of a cold start once a run has warmed them: their hot
points level off 1-3 C above it (and up to 10 C where the room or chassis warms during the run), and each
such cool-down watched the plateau window (PLATEAU_S without a degree's fall) at that level before it
ended. Once a GPU's cool-down has levelled off in this run, a later one also ends as it reaches that
level (the temperature the latest plateau ended at: cooldown_levels), where the plateau rule would end
it, without watching the window again (status "levelled"). The latest rather than a median: the level
drifts up as the surroundings warm (H100s, one run: 42 C at the first plateau, 48 C at the tenth).
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .sources import TelemetrySource, open_source

# A cool-down this much longer than the idle baseline has the sampler running through its whole tail
# (harness.py takes the baseline from that tail).
IDLE_TAIL_MARGIN_S = 1.0
PLATEAU_S = 10.0  # the plateau window: seconds over which a settled temperature falls by less than...
PLATEAU_DROP_C = 1.0  # ...this
COOLDOWN_MARGIN_C = 1.0  # within this of its idle temperature a device has no heat left to lose
# Seconds a GPU is left alone after the previous measurement on it ended, before the next looks at it: its
# driver keeps the clocks up for a moment after the last context goes (H100: 1980 MHz and 124 W for the
# first second, 72 W idle from the second on). Jobs forked from the fork server start within a second of
# the previous one's end, so without this an idle baseline would open inside that moment. 2.5 s: the
# second that moment lasts, and as long again for cards that hold their clocks a little longer.
SETTLE_S = 2.5


@dataclass(frozen=True)
class CooldownResult:
    status: str  # "reached", "levelled", "plateau", "timeout", "off" (no wait asked), or "no_temperature"
    waited_s: float
    start_temp_c: float
    end_temp_c: float
    target_temp_c: float | None
    # the warmest device's level, where earlier cool-downs of the run levelled off above its target
    level_temp_c: float | None = None
    # each device's last reading (the plateau's temperatures, recorded as levels: harness.py)
    end_temps_c: dict[str, float] = field(default_factory=dict)
    # seconds waited after the cool-down for the previous measurement's end to be SETTLE_S behind (the
    # cool-down leaves the GPU alone too, so a wait of SETTLE_S or more leaves nothing to settle)
    settled_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def idle_temperatures(source: TelemetrySource, folder: Path | None) -> dict[str, float]:
    """Each device's idle temperature for this run: read from `folder` (one file per GPU, by UUID) where
    an earlier measurement of the run recorded it, else recorded now, at the start of the run's first
    measurement on that device. Devices without a temperature reading are left out."""
    if folder is None:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    readings = source.temperature_c()
    files = _identity_files(source, folder, ".json", readings)
    return {
        device: _record_once(files[device], temperature)
        for device, temperature in readings.items()
        if not math.isnan(temperature)
    }


def _identity_files(
    source: TelemetrySource, folder: Path, suffix: str, devices: Iterable[str] | None = None
) -> dict[str, Path]:
    """One file per device (of `devices`, else all the source's), named by its UUID where known."""
    identities = getattr(source, "identities", lambda: {})()
    return {
        device: folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', identities.get(device, device))}{suffix}"
        for device in (source.devices() if devices is None else devices)
    }


def cooldown_levels(source: TelemetrySource, folder: Path | None) -> dict[str, float]:
    """Each device's level in this run: the temperature its latest cool-down that levelled off above its
    target ended at (record_level), where one has."""
    if folder is None:
        return {}
    found = {}
    for device, path in _identity_files(source, folder, ".levels").items():
        try:
            temperatures = [float(line) for line in path.read_text().split()]
        except (OSError, ValueError):
            continue
        if temperatures:
            found[device] = temperatures[-1]
    return found


def forget_levels(folder: Path) -> None:
    """Drop the levels earlier runs into this results folder learned: a level describes the card's
    surroundings while one run goes on (the idle temperature, recorded once, stays for reruns)."""
    for path in folder.glob("*.levels") if folder.is_dir() else ():
        path.unlink(missing_ok=True)


def record_level(
    source: TelemetrySource, folder: Path | None, result: CooldownResult, targets: dict[str, float]
) -> None:
    """After a cool-down that ended at a plateau, add each device's temperature there to its levels,
    where it lies above the device's target (a device at its target has no level to learn)."""
    if folder is None or result.status != "plateau":
        return
    folder.mkdir(parents=True, exist_ok=True)
    files = _identity_files(source, folder, ".levels", result.end_temps_c)
    for device, temperature in result.end_temps_c.items():
        if not math.isnan(temperature) and temperature > targets.get(device, -math.inf):
            # one short line appended: one GPU's measurements run one at a time
            with files[device].open("a") as levels_file:
                levels_file.write(f"{temperature}\n")


def record_end(source: TelemetrySource, folder: Path | None) -> None:
    """Note that a measurement on each of the source's devices ends now (for the next one's settle)."""
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    for path in _identity_files(source, folder, ".ended").values():
        with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as draft:
            draft.write(repr(time.time()))
        os.replace(draft.name, path)


@contextmanager
def measuring(source: TelemetrySource, folder: Path | None) -> Iterator[None]:
    """Around a measurement: its end is recorded however it ends (a failed point's context goes too)."""
    try:
        yield
    finally:
        record_end(source, folder)


@contextmanager
def busy(
    gpu_indices: list[int],
    folder: Path | None,
    opener: Callable[[list[int]], TelemetrySource] = open_source,
) -> Iterator[None]:
    """Around GPU work that is no measurement of its own (training, the reference rates): its end is
    recorded as a measurement's is, so the next measurement on those GPUs settles after it. Without it,
    an SGEMM point straight after a ResNet-50 training job took its idle baseline at 84-90 W, where
    the card rests at 74 W (H100, 2026-11-27)."""
    if folder is None or not gpu_indices:
        yield
        return
    source = opener(gpu_indices)
    try:
        with measuring(source, folder):
            yield
    finally:
        source.close()


def last_end(source: TelemetrySource, folder: Path | None) -> float | None:
    """When the last measurement on any of the source's devices ended (Unix seconds; None: none has)."""
    if folder is None:
        return None
    ends = []
    for path in _identity_files(source, folder, ".ended").values():
        try:
            ends.append(float(path.read_text()))
        except (OSError, ValueError):
            continue
    return max(ends, default=None)


def settle(
    source: TelemetrySource,
    folder: Path | None,
    settle_s: float = SETTLE_S,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Wait until the last measurement on any of the devices ended settle_s ago; the seconds waited."""
    end = last_end(source, folder)
    wait = 0.0 if end is None else end + settle_s - time.time()
    if wait > 0:
        sleep(min(wait, settle_s))
    return max(0.0, min(wait, settle_s))


def _record_once(path: Path, temperature: float) -> float:
    """The temperature in `path`, written there first if no measurement has (atomically: a file linked
    into place whole, so jobs on other GPUs or a parallel job never read half of one)."""
    if not path.exists():
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as draft:
            json.dump({"idle_temperature_c": temperature, "recorded_unix_s": time.time()}, draft)
        try:
            os.link(draft.name, path)
        except FileExistsError:
            pass  # another job recorded it first: theirs stands
        finally:
            os.unlink(draft.name)
    return float(json.loads(path.read_text())["idle_temperature_c"])


def wait_for_cooldown(
    source: TelemetrySource,
    max_wait_s: float,
    target_temp_c: float | dict[str, float] | None = None,
    plateau_s: float = PLATEAU_S,
    poll_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    level_temp_c: dict[str, float] | None = None,
) -> CooldownResult:
    """Poll the devices until each is at or below its target (one for all, or one per device), or at or
    below the higher of its target and its level (level_temp_c: cooldown_levels), or the hottest has
    plateaued, or max_wait_s has passed; with targets met at the first reading, no wait.

    A device whose temperature cannot be read (many CPUs in containers) makes the wait pointless; it returns
    at once with status "no_temperature" so the caller can say so plainly.
    """
    started = time.monotonic()
    readings = source.temperature_c()
    start_temp = max(readings.values())
    targets = _targets(target_temp_c, readings)
    target = max(targets.values()) if targets else None
    # a level counts only above the device's target: below it, the target ends the wait first
    above = {d: t for d, t in (level_temp_c or {}).items() if t > targets.get(d, -math.inf)}
    ends = {**targets, **above}
    level = max(above.values()) if above else None
    if math.isnan(start_temp):
        return CooldownResult("no_temperature", 0.0, start_temp, start_temp, target)
    history = [(0.0, start_temp)]
    while True:
        elapsed, current = history[-1]
        status: str | None = None
        if targets and all(readings[d] <= t for d, t in targets.items() if d in readings):
            status = "reached"
        elif above and all(readings[d] <= t for d, t in ends.items() if d in readings):
            status = "levelled"
        elif elapsed >= plateau_s and _plateaued(history, elapsed - plateau_s, current):
            status = "plateau"
        elif elapsed >= max_wait_s:
            # a wait of 0 s is no cool-down at all (a quick run's studies that take none), not one cut short
            status = "timeout" if max_wait_s > 0 else "off"
        if status is not None:
            return CooldownResult(status, elapsed, start_temp, current, target, level, dict(readings))
        sleep(poll_s)
        readings = source.temperature_c()
        history.append((time.monotonic() - started, max(readings.values())))


def _plateaued(history: list[tuple[float, float]], since: float, current: float) -> bool:
    """Whether the temperature fell by less than PLATEAU_DROP_C from its reading at `since` to `current`."""
    earlier = [temp for t, temp in history if t <= since]
    return bool(earlier) and earlier[-1] - current < PLATEAU_DROP_C


def _targets(target: float | dict[str, float] | None, readings: dict[str, float]) -> dict[str, float]:
    if target is None:
        return {}
    return dict(target) if isinstance(target, dict) else {device: target for device in readings}
