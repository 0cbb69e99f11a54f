"""`dcgmi dmon` output read into samples by the names in its header line (each column named by the
field's short name, e.g. SMACT), never by an assumed column order."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from .fields import FIELDS, Field, Sample


class DmonParser:
    """Turns `dcgmi dmon` output lines into samples, reading each column's field from the header.

    The format (DCGM's dcgmi/DeviceMonitor.cpp): a header line `#Entity` (`# Entity` before DCGM 3) and
    one short name per column, then a line of units starting `ID`, then one row per entity and round,
    `GPU <id>` followed by one value per column (`N/A` when blank); the header repeats every 14 rounds.
    Rows carry no time: a row is stamped when read, as dmon flushes its output after every round.
    """

    def __init__(self, fields: Sequence[Field] = FIELDS) -> None:
        self._by_short_name = {field.short_name: field.field_id for field in fields}
        self.columns: list[int | None] | None = None
        self.samples: list[Sample] = []
        self.other_lines: deque[str] = deque(maxlen=20)  # errors and messages, for diagnostics

    @property
    def saw_header(self) -> bool:
        return self.columns is not None

    def feed(self, line: str, t_unix_s: float) -> None:
        tokens = line.split()
        if not tokens:
            return
        if tokens[0].startswith("#"):
            names = [tokens[0].lstrip("#"), *tokens[1:]]
            names = [name for name in names if name]
            if names and names[0].lower() == "entity":
                columns = [self._by_short_name.get(name) for name in names[1:]]
                if any(column is not None for column in columns):
                    self.columns = columns
                    return
            self.other_lines.append(line.strip())
            return
        if tokens[0].lower() == "id":
            return  # the units line under the header
        if self.columns is None or tokens[0] != "GPU" or len(tokens) < 2 or not tokens[1].isdigit():
            self.other_lines.append(line.strip())
            return
        values = tokens[2:]
        if len(values) != len(self.columns):
            self.other_lines.append(f"row does not match the header's {len(self.columns)} columns: {line}")
            return
        gpu = int(tokens[1])
        for field_id, text in zip(self.columns, values, strict=True):
            if field_id is None or text == "N/A":
                continue
            try:
                self.samples.append((t_unix_s, gpu, field_id, float(text)))
            except ValueError:
                self.other_lines.append(f"not a number for field {field_id}: {text!r}")
