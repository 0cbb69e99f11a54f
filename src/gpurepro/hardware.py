"""The hardware table (config/hardware/<gpu>.yaml): the GPUs claims are made on, how NVML names them, and
their reference rates, through which an absolute claim is scaled to the GPU a run measures.

Each rate keeps its datasheet peak and, where one was measured, the measured rate apart: scaling takes
like for like (a rate measured here against one measured on the paper's GPU, else datasheet against
datasheet), never a measured rate against a peak no GPU reaches."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import GpureproError
from .profiles import project_root
from .schema import first_error, read_yaml

MEASURED, DATASHEET = "measured", "datasheet"


@dataclass(frozen=True)
class Rate:
    """One reference rate of a GPU on one basis: measured (with who measured it) or the datasheet's."""

    value: float
    basis: str  # MEASURED or DATASHEET
    source: str

    def describe(self, unit: str) -> str:
        return f"{self.value:.4g} {unit} ({self.basis}: {self.source})"


@dataclass(frozen=True)
class Rates:
    """A reference rate of a GPU on each basis it is known on."""

    datasheet: Rate | None
    measured: Rate | None

    def on(self, basis: str) -> Rate | None:
        return self.measured if basis == MEASURED else self.datasheet


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    nvml_names: tuple[str, ...]
    rates: dict[str, Rates]
    compute_capability: str = ""

    @property
    def generation(self) -> int | None:
        """The chip's generation: its compute capability's major number (7 Volta and Turing, 8 Ampere,
        9 Hopper); None where unknown."""
        return int(self.compute_capability.split(".")[0]) if self.compute_capability else None

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
    rates = {name: _rates(entry, datasheet) for name, entry in data["rates"].items()}
    return Gpu(path.stem, data["name"], tuple(data["nvml_names"]), rates, data.get("compute_capability", ""))


def _rates(entry: dict[str, Any], datasheet: str) -> Rates:
    """A measurement is what a GPU really reaches; a datasheet peak is what it never exceeds: both kept."""
    measured = entry.get("measured")
    return Rates(
        Rate(entry["datasheet"], DATASHEET, datasheet) if "datasheet" in entry else None,
        Rate(measured["value"], MEASURED, measured["source"]) if measured else None,
    )


def matching(hardware: dict[str, Gpu], nvml_names: tuple[str, ...]) -> Gpu | None:
    """The hardware entry of the GPU a run measured (every name it measured matching one entry), or
    None where no entry, or more than one model, matches."""
    found = {gpu.id for gpu in hardware.values() for name in nvml_names if gpu.matches(name)}
    if len(found) != 1 or not all(any(gpu.matches(n) for gpu in hardware.values()) for n in nvml_names):
        return None
    return hardware[found.pop()]
