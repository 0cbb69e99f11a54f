"""Which sampler runs a measurement's telemetry: its own process (the default) or a thread of the
measured process (for comparison, and where a site cannot start processes). Config `telemetry.sampler`,
option `--sampler`."""

from __future__ import annotations

from .process import ProcessSampler
from .sampler import Sampler, ThreadSampler
from .sources import TelemetrySource

SAMPLERS: dict[str, type[Sampler]] = {"process": ProcessSampler, "thread": ThreadSampler}
DEFAULT_SAMPLER = "process"


def open_sampler(source: TelemetrySource, rate_hz: float, kind: str = DEFAULT_SAMPLER) -> Sampler:
    """A sampler of `kind` (a key of SAMPLERS) for `source`; start it with `with` or start()."""
    if kind not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {kind!r}")
    return SAMPLERS[kind](source, rate_hz)
