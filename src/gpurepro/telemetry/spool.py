"""How samples travel from the sampling process to the measured one: fixed-size binary records, one per
device per sample, appended to a temporary file both processes hold open.

The file is unlinked as soon as it is made, so it vanishes with the last process holding it, whatever
ends them. The sampling process writes through a buffer (a system call every few hundred samples); the
measured process reads the whole file once, after sampling stopped, so it spends no time on telemetry
while it measures. A record is every column of SAMPLE_COLUMNS as a float64, the device as its position
in the device list the sampling process reported when it started. Only the standard library here: the
sampling process imports this module; the measured process decodes records with numpy (process.py).
"""

from __future__ import annotations

import struct
from typing import Any

from .sources import SAMPLE_COLUMNS

RECORD = struct.Struct(f"<{len(SAMPLE_COLUMNS)}d")


def pack(row: dict[str, Any], device_number: int) -> bytes:
    """One sample of one device as a record."""
    return RECORD.pack(*(device_number if c == "device" else row[c] for c in SAMPLE_COLUMNS))
