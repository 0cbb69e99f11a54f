"""What a run measured on: the NVML names of its GPUs, how many it had, and its reference rates, read
from its tables. The judge compares these with a claim's paper GPUs to pick how the claim is judged."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .scaling import measured_references


@dataclass(frozen=True)
class Here:
    """What a run measured on: its GPUs' NVML names, how many GPUs it had, its reference rates."""

    gpu_names: tuple[str, ...]
    gpu_count: int
    references: dict[str, float]

    @classmethod
    def of(cls, tables: dict[str, pd.DataFrame], gpu_count: int | None = None) -> Here:
        """From the tables (every GPU name they record); the GPU count, unless the workflow says how
        many GPUs the run had, is the number of distinct GPUs (by UUID) the tables name."""
        names = gpu_names(tables)
        count = gpu_count if gpu_count is not None else count_gpus(tables)
        return cls(names, count, measured_references(tables))

    def describe(self) -> str:
        return ", ".join(self.gpu_names) or "no GPU"


def gpu_names(tables: dict[str, pd.DataFrame]) -> tuple[str, ...]:
    """The NVML names of the GPUs this run measured, from every table that records them (the CPU,
    which the tables name 'cpu', is not a GPU)."""
    names: set[str] = set()
    for table in tables.values():
        if "gpu_name" in table.columns:
            names.update(str(n) for n in table["gpu_name"].dropna().unique())
    return tuple(sorted(names - {"cpu"}))


def count_gpus(tables: dict[str, pd.DataFrame]) -> int:
    """Distinct GPUs by UUID (two GPUs of one model share a name); by name where no table has UUIDs."""
    uuids: set[str] = set()
    for table in tables.values():
        if {"gpu_uuid", "gpu_name"} <= set(table.columns):
            gpus = table[table["gpu_name"].astype(str) != "cpu"]
            uuids.update(str(u) for u in gpus["gpu_uuid"].dropna().unique() if str(u).strip())
    return len(uuids) or len(gpu_names(tables))
