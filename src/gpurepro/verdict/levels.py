"""Levels of variation (Kalibera and Jones, "Rigorous benchmarking in reasonable time"): how far one
point's figure moves between repetitions inside a process, processes of one run, runs on one machine and
machines (cards) of one GPU model, per study, pace (host-paced or GPU-bound) and kind of figure (time,
rate, power, energy, count), each with the runs it was measured on (config/between_process.yaml, its
`levels`).

Why: an interval over one run's processes shows where that run's next process would land, not where
another machine's run lands. Eager serial HFTA steps at B=1 moved 1.4x between processes on one H200
while three processes of one run agreed within 3%; a claim read against a paper is read against a
figure measured on other machines, so its interval must be at least as wide as the spread between
machines. Each level's spread is the geometric SD (GSD) of one figure observed at that level with every
lower level moving under it (a run's figure differs from the next run's by their processes too), so the
spread at the highest level a reading spans is the one its interval needs.

A side measured over n processes of one run: the processes level shrinks as 1/sqrt(n) (the median of n
draws); the runs and machines levels do not (more processes of one run on one host do not visit other
hosts). The repetitions level is shown, never used: a process's own interval already holds it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

from ..compare import spread
from ..errors import GpureproError
from ..schema import first_error, read_yaml

REPETITIONS, PROCESSES, RUNS, MACHINES = "repetitions", "processes", "runs", "machines"
LEVELS = (REPETITIONS, PROCESSES, RUNS, MACHINES)  # lowest first
# A claim read against a paper's figure (or the project's own, measured on other cards) spans machines.
CLAIM_SPANS = MACHINES
KINDS = ("time", "rate", "power", "energy", "count")
_TIME_UNITS = {"ns", "us", "µs", "ms", "s", "min", "h"}
_POWER_UNITS = {"W", "mW", "kW"}
_ENERGY_UNITS = {"J", "mJ", "kJ", "Wh", "kWh"}
_COUNT_UNITS = {"count", "processes", "models", "reps", "steps", "inferences", "samples", "gpus", "GPUs"}


def kind_of(unit: str) -> str | None:
    """The kind of figure a unit measures; a ratio ('x', '1', or '%' as a scaling efficiency is) is a rate's
    (it divides two rates); None for what no level is kept for (clocks, temperatures)."""
    unit = unit.strip()
    if unit in _TIME_UNITS:
        return "time"
    if unit in ("x", "%", "1") or unit.endswith("/s"):
        return "rate"
    if unit in _POWER_UNITS:
        return "power"
    if unit in _ENERGY_UNITS:
        return "energy"
    if unit in _COUNT_UNITS:
        return "count"
    return None


@dataclass(frozen=True)
class Level:
    """One level's measured spread of one study, pace and kind: its GSD, over how many units of that level
    (processes, runs or machines), the runs it was measured on and how."""

    study: str
    pace: str
    kind: str
    level: str
    gsd: float
    over: int
    runs: tuple[str, ...]
    source: str

    def describe(self) -> str:
        """'between machines GSD 1.152 (hfta host-paced rate, over 5)'."""
        names = {REPETITIONS: "within a process", PROCESSES: "between processes", RUNS: "between runs"}
        where = names.get(self.level, "between machines")
        what = f"{self.study} {spread.SHOWN[self.pace]} {self.kind}"
        return f"{where} GSD {self.gsd:.4g} ({what}, over {self.over})"


Levels = dict[tuple[str, str, str, str], Level]  # (study, pace, kind, level) -> its spread


def levels_file() -> str:
    """The file the levels are kept in, as a reading names it."""
    return str(spread.CONFIG)


@functools.cache
def load(path: Path | None = None, schema: Path | None = None) -> Levels:
    """Every level recorded, read once. The processes level of a kind without one of its own is the pace's
    between-process spread that `gpurepro compare` reads (its `gsd`, or its `by_metric` entry named as the
    kind); the others only where measured."""
    path = Path(path) if path else spread.default_path()
    if not path.is_file():
        raise GpureproError(f"levels of variation {path} do not exist (the verdict reads them)")
    data = read_yaml(path, "levels of variation file")
    problem = first_error(data, Path(schema) if schema else spread.default_schema())
    if problem:
        raise GpureproError(f"bad levels of variation file {path}: {problem}")
    found: Levels = {}
    for study, paces in data.items():
        for pace, entry in paces.items():
            for kind in KINDS:
                own = (entry.get("by_metric") or {}).get(kind, entry)  # sgemm's power: its own
                found[(study, pace, kind, PROCESSES)] = Level(
                    study, pace, kind, PROCESSES, float(own["gsd"]), int(own["processes"]), (),
                    str(own["source"]).strip(),
                )  # fmt: skip
            for kind, levels in (entry.get("levels") or {}).items():
                for level, own in levels.items():
                    found[(study, pace, kind, level)] = Level(
                        study, pace, kind, level, float(own["gsd"]), int(own["over"]),
                        tuple(str(run) for run in own["runs"]), str(own["source"]).strip(),
                    )  # fmt: skip
    return found


@dataclass(frozen=True)
class SideSpread:
    """The spread one side of a reading carries: the GSD its figure needs, the level it comes from, and
    whether the machines level was measured for it (without it a host-paced magnitude cannot resolve)."""

    gsd: float
    level: Level
    machines_measured: bool

    def describe(self, processes: int | None) -> str:
        scaled = self.level.level == PROCESSES and processes and processes > 1
        shrunk = f" over {processes} processes: GSD {self.gsd:.4g}" if scaled else ""
        return f"{self.level.describe()}{shrunk}"


def side_spread(
    levels: Levels, study: str, pace: str, kind: str | None, processes: int | None, spans: str = CLAIM_SPANS
) -> SideSpread | None:
    """The widest spread among the levels up to `spans` (repetitions apart) for one side measured over
    `processes` processes (unknown: one); None where no level is recorded for its study, pace and kind."""
    if kind is None:
        return None
    count = processes if processes and processes > 0 else 1
    widest: SideSpread | None = None
    for level in LEVELS[1 : LEVELS.index(spans) + 1]:
        found = levels.get((study, pace, kind, level))
        if found is None:
            continue
        gsd = found.gsd ** (1 / math.sqrt(count)) if level == PROCESSES else found.gsd
        if widest is None or gsd > widest.gsd:
            widest = SideSpread(gsd, found, False)
    if widest is None:
        return None
    measured = (study, pace, kind, MACHINES) in levels and LEVELS.index(spans) >= LEVELS.index(MACHINES)
    return SideSpread(widest.gsd, widest.level, measured)
