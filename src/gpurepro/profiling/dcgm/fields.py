"""The DCGM profiling fields sampled (SM active, SM occupancy, tensor active, DRAM active, PCIe,
framebuffer used) and the tidy table their samples make: what every back-end reads and every output
holds, named once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Field:
    field_id: int
    name: str  # DCGM's field tag
    short_name: str  # the column name `dcgmi dmon` prints
    unit: str


# Field ids, tags and dmon short names from DCGM's dcgm_fields.h and dcgmlib/src/dcgm_fields.cpp (DCGM 4
# renamed the 100x constants, e.g. DCGM_FI_PROF_SM_ACTIVE to DCGM_FI_PROF_SM_UTIL_RATIO; the ids and
# short names stayed). Ratios are 0..1 of elapsed cycles; PCIe fields are a rate in bytes per second
# (DCGM user guide, profiling metrics); framebuffer used is in MiB ("MB" in dcgm_fields.h).
FIELDS: tuple[Field, ...] = (
    Field(1002, "sm_active", "SMACT", "ratio"),
    Field(1003, "sm_occupancy", "SMOCC", "ratio"),
    Field(1004, "tensor_active", "TENSO", "ratio"),
    Field(1005, "dram_active", "DRAMA", "ratio"),
    Field(1009, "pcie_tx_bytes", "PCITX", "B/s"),
    Field(1010, "pcie_rx_bytes", "PCIRX", "B/s"),
    Field(252, "fb_used", "FBUSD", "MiB"),
)
FIELD_BY_ID = {field.field_id: field for field in FIELDS}
COLUMNS = ["t_unix_s", "gpu", "field", "field_id", "value", "unit"]

Sample = tuple[float, int, int, float]  # (t_unix_s, gpu, field_id, value)


def samples_frame(samples: Sequence[Sample]) -> pd.DataFrame:
    """The tidy table: one row per GPU, field and sample time."""
    rows = [
        {
            "t_unix_s": t,
            "gpu": gpu,
            "field": FIELD_BY_ID[field_id].name,
            "field_id": field_id,
            "value": value,
            "unit": FIELD_BY_ID[field_id].unit,
        }
        for t, gpu, field_id, value in samples
        if field_id in FIELD_BY_ID
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["t_unix_s", "gpu", "field_id"], kind="stable").reset_index(drop=True)
