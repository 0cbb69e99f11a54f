"""How samples travel from the sampling process to the measured one: fixed-size binary records appended
to a temporary file both processes hold open.

The file is unlinked as soon as it is made, so it vanishes with the last process holding it, whatever
ends them. The sampling process writes through a buffer (a system call every few hundred samples); the
measured process reads the whole file once, after sampling stopped, so it spends no time on telemetry
while it measures. A record is every column of SAMPLE_COLUMNS as a float64. There are two kinds:
- a sample: one device's row of one sample, its device column the device's position n in the device list
  the sampling process reported when it started (0, 1, ...);
- an energy reading: one device's energy counter read by the sampling process's energy thread, on its own
  clock: time_unix_s (the midpoint of the read) and energy_j set, every other column NaN, and the device
  column -1 - n (-1, -2, ...), so that a reader tells the two kinds apart by the sign alone.
Only the standard library here: the sampling process imports this module; the measured process decodes
records with numpy (process.py).
"""

from __future__ import annotations

import math
import struct
import threading
from typing import Any, BinaryIO

from .sources import SAMPLE_COLUMNS, EnergyReading

RECORD = struct.Struct(f"<{len(SAMPLE_COLUMNS)}d")
DEVICE_COLUMN = SAMPLE_COLUMNS.index("device")
_NO_SAMPLE = dict.fromkeys(SAMPLE_COLUMNS, math.nan)


def energy_device_code(number: Any) -> Any:
    """The device column of device `number`'s energy readings: -1 - number. The map is its own inverse,
    so the same call decodes a code, for an int and a numpy array alike."""
    return -1 - number


def pack(row: dict[str, Any], device_number: int) -> bytes:
    """One sample of one device as a record."""
    return RECORD.pack(*(device_number if c == "device" else row[c] for c in SAMPLE_COLUMNS))


def pack_energy(reading: EnergyReading, device_number: int) -> bytes:
    """One energy counter reading as a record, stamped with the midpoint of its read."""
    row = {**_NO_SAMPLE, "time_unix_s": reading.time_unix_s, "energy_j": reading.joules}
    return pack(row, energy_device_code(device_number))


class SpoolWriter:
    """Appends records to the spool from the sampling loop and the energy thread alike: one lock around
    each write, so that records never interleave. Reads of the source happen outside it, so a slow
    energy read never holds up a sample's write."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._lock = threading.Lock()

    def sample(self, row: dict[str, Any], device_number: int) -> None:
        self._write(pack(row, device_number))

    def energy(self, reading: EnergyReading, device_number: int) -> None:
        self._write(pack_energy(reading, device_number))

    def flush(self) -> None:
        with self._lock:
            self._file.flush()

    def _write(self, record: bytes) -> None:
        with self._lock:
            self._file.write(record)
