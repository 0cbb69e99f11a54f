"""The hardware table (config/hardware/<gpu>.yaml): the GPUs claims are made on, how NVML names them, and
their reference rates, through which an absolute claim is scaled to the GPU a run measures."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GpureproError
from ..profiles import project_root
from ..schema import first_error, read_yaml


@dataclass(frozen=True)
class Rate:
    """One reference rate of a GPU: a published measurement where one exists, else the datasheet's peak."""

    value: float
    basis: str  # "measured" or "datasheet"
    source: str

    def describe(self, unit: str) -> str:
        return f"{self.value:.4g} {unit} ({self.basis}: {self.source})"


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    nvml_names: tuple[str, ...]
    rates: dict[str, Rate]

    def matches(self, nvml_name: str) -> bool:
        """Whether a GPU NVML calls `nvml_name` is this model (then its claims are judged exactly). The
        patterns must match the whole name, so an A100 80GB PCIe or an H200 NVL (other power limits and
        clocks) is not taken for the SXM card a paper measured."""
        return any(re.fullmatch(pattern, nvml_name) for pattern in self.nvml_names)


def default_dir() -> Path:
    return project_root() / "config" / "hardware"


def default_schema() -> Path:
    return project_root() / "workflow" / "schemas" / "hardware.schema.yaml"


def load_hardware(directory: Path | str | None = None, schema: Path | str | None = None) -> dict[str, Gpu]:
    """Every GPU of the table by id (its file's name), each file checked against the schema."""
    directory = Path(directory) if directory else default_dir()
    if not directory.is_dir():
        raise GpureproError(f"hardware table {directory} does not exist")
    return {
        path.stem: _load(path, Path(schema) if schema else default_schema()) for path in _files(directory)
    }


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))


def _load(path: Path, schema: Path) -> Gpu:
    data = read_yaml(path, "hardware file")
    problem = first_error(data, schema)
    if problem:
        raise GpureproError(f"bad hardware file {path}: {problem}")
    for pattern in data["nvml_names"]:
        try:
            re.compile(pattern)
        except re.error as err:
            raise GpureproError(f"bad hardware file {path}: key nvml_names: '{pattern}': {err}") from None
    datasheet = data["source"]["title"]
    rates = {name: _rate(entry, datasheet) for name, entry in data["rates"].items()}
    return Gpu(path.stem, data["name"], tuple(data["nvml_names"]), rates)


def _rate(entry: dict[str, Any], datasheet: str) -> Rate:
    """A published measurement is what a GPU really reaches; a datasheet peak is what it never exceeds."""
    if "measured" in entry:
        return Rate(entry["measured"]["value"], "measured", entry["measured"]["source"])
    return Rate(entry["datasheet"], "datasheet", datasheet)
