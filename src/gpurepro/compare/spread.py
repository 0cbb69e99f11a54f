"""The between-process spread the project measured (config/between_process.yaml), per study and kind.

Where a side of a comparison has a single process, its data give no interval across processes: one
process's reps show that process's noise, not how far the next process lands. The fallback is the
geometric SD of one point's figure over many processes that the project measured on one host for that
kind of figure, host-paced (the host sets the pace: eager batch-1 inference, stock HFTA steps at small B)
or GPU-bound, with the run it came from. Where a metric of a study spreads otherwise than its time or
rate (an SGEMM's power and temperature follow the GPU's thermal state, which moves more from one process
to the next than its time does), its own measured spread (`by_metric`) is used for it. A study without an
entry has no measured spread, and the row says so (it is graded by the old noise floor instead).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..errors import GpureproError
from ..profiles import project_root
from ..schema import first_error, read_yaml

HOST_PACED, GPU_BOUND = "host_paced", "gpu_bound"
PACES = (HOST_PACED, GPU_BOUND)
SHOWN = {HOST_PACED: "host-paced", GPU_BOUND: "GPU-bound"}
CONFIG = Path("config") / "between_process.yaml"


@dataclass(frozen=True)
class Spread:
    """One measured between-process spread: its GSD, over how many processes, and where it came from."""

    study: str
    pace: str  # HOST_PACED or GPU_BOUND
    gsd: float
    processes: int
    source: str
    path: str  # the file it was read from, as the basis text names it
    metric: str | None = None  # the one metric it was measured for (by_metric), None: every other one

    def describe(self) -> str:
        """'measured between-process GSD 1.41 (inference, host-paced; config/between_process.yaml)'."""
        what = self.study if self.metric is None else f"{self.study} {self.metric}"
        return f"measured between-process GSD {self.gsd:.4g} ({what}, {SHOWN[self.pace]}; {self.path})"


# (study, pace, metric) -> its spread; metric None for the pace's own spread, which every metric of the
# study without a spread of its own reads
Spreads = dict[tuple[str, str, str | None], Spread]


def default_path() -> Path:
    return project_root() / CONFIG


def default_schema() -> Path:
    return project_root() / "workflow" / "schemas" / "between_process.schema.yaml"


def _shown(path: Path) -> str:
    """The path as the rows name it: relative to the checkout where it lies inside it."""
    try:
        return str(path.resolve().relative_to(project_root()))
    except ValueError:
        return str(path)


@functools.cache
def load(path: Path | None = None, schema: Path | None = None) -> Spreads:
    """(study, pace) -> Spread, read once; a missing or malformed file is an error naming it and the key."""
    path = Path(path) if path else default_path()
    if not path.is_file():
        raise GpureproError(f"between-process spreads {path} do not exist (gpurepro compare reads them)")
    data = read_yaml(path, "between-process spread file")
    problem = first_error(data, Path(schema) if schema else default_schema())
    if problem:
        raise GpureproError(f"bad between-process spread file {path}: {problem}")
    shown = _shown(path)
    found: Spreads = {}
    for study, kinds in data.items():
        for pace, entry in kinds.items():
            found[(study, pace, None)] = _spread(study, pace, entry, shown, None)
            for metric, own in entry.get("by_metric", {}).items():
                found[(study, pace, metric)] = _spread(study, pace, own, shown, metric)
    return found


def _spread(study: str, pace: str, entry: dict, path: str, metric: str | None) -> Spread:
    return Spread(
        study, pace, float(entry["gsd"]), int(entry["processes"]), str(entry["source"]).strip(), path, metric
    )


def find(spreads: Spreads, study: str, pace: str, metric: str | None = None) -> Spread | None:
    """The spread measured for this metric of this study and pace, else for the study and pace, or None
    where the project measured none."""
    return spreads.get((study, pace, metric)) or spreads.get((study, pace, None))
