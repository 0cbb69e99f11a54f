"""What a DCGM back-end is to the monitor: something that starts sampling, or says why it cannot, and
stops with its samples. The bindings (bindings.py) and `dcgmi dmon` (dmon.py) both are one."""

from __future__ import annotations

from typing import Protocol

from .fields import Sample


class DcgmStartError(Exception):
    """A DCGM source was found but could not start sampling (no host engine, no permission, ...)."""


class Sampler(Protocol):
    description: str

    def start(self) -> None: ...

    def stop(self) -> list[Sample]: ...
