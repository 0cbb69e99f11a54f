"""Wait for a device to cool down before a measurement, so runs start from comparable thermal states.

With a known idle temperature (measured once, e.g. at the start of a study) the wait ends at that
temperature plus a margin. Without one it ends when the temperature stops falling (a plateau), which is
what "near idle" means for a GPU that has just finished other work.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .sources import TelemetrySource

PLATEAU_DROP_C = 1.0  # a temperature that fell by less than this over the plateau window has settled


@dataclass(frozen=True)
class CooldownResult:
    status: str  # "reached", "plateau", "timeout", or "no_temperature"
    waited_s: float
    start_temp_c: float
    end_temp_c: float
    target_temp_c: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def wait_for_cooldown(
    source: TelemetrySource,
    max_wait_s: float,
    target_temp_c: float | None = None,
    plateau_s: float = 10.0,
    poll_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> CooldownResult:
    """Poll the hottest device until it is at or below target_temp_c (or has plateaued when no target is
    given), or max_wait_s has passed.

    A device whose temperature cannot be read (many CPUs in containers) makes the wait pointless; it returns
    at once with status "no_temperature" so the caller can say so plainly.
    """
    started = time.monotonic()
    start_temp = max(source.temperature_c().values())
    if math.isnan(start_temp):
        return CooldownResult("no_temperature", 0.0, start_temp, start_temp, target_temp_c)
    history = [(0.0, start_temp)]
    while True:
        elapsed, current = history[-1]
        if target_temp_c is not None and current <= target_temp_c:
            return CooldownResult("reached", elapsed, start_temp, current, target_temp_c)
        if target_temp_c is None and elapsed >= plateau_s:
            earlier = [temp for t, temp in history if t <= elapsed - plateau_s]
            if earlier and earlier[-1] - current < PLATEAU_DROP_C:
                return CooldownResult("plateau", elapsed, start_temp, current, target_temp_c)
        if elapsed >= max_wait_s:
            return CooldownResult("timeout", elapsed, start_temp, current, target_temp_c)
        sleep(poll_s)
        history.append((time.monotonic() - started, max(source.temperature_c().values())))
