"""The spread of each kind of figure at each level of variation, computed from packed runs, beside the
levels the verdict reads (config/between_process.yaml, `levels`; src/gpurepro/verdict/levels.py).

Levels (Kalibera and Jones): repetitions inside one process (a process's IQR over its reps, as a GSD:
exp(ln(p75/p25) / 1.349)), processes of one run (each point's GSD over its processes, from the
across-process tables), runs on one machine (the runs whose GPUs overlap: each point's run medians) and
machines (the runs whose GPUs do not: each point's machine mean). Each level pools its points of one
study, pace (host-paced: the GPU busy under half the time, else the point's kind) and kind (time, rate,
power, energy, count) as the root mean square of their log spreads, and prints how many points and runs
stand behind it. A level with one unit (one run, one machine) is left out: it shows no spread.

    python benchmarks/variation_levels.py                      # the shipped reference runs
    python benchmarks/variation_levels.py results/h200 other/h200 reference-runs/x.tar.gz
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections import defaultdict
from pathlib import Path

import pandas as pd

from gpurepro.compare import pack
from gpurepro.profiles import project_root
from gpurepro.verdict import hostpaced, levels

# A log-normal's IQR spans 1.349 standard deviations.
IQR_SDS = 1.349
# Figures taken at rest or of the GPU's state: no level is kept for them.
AT_REST = {
    "idle_power",
    "active_idle_power",
    "parameters",
    "processes",
    "failed_processes",
    "gpu_utilization",
}
# A process's own spread or extremes (its IQR, quartiles, min and max): not one figure of the point.
NOT_A_FIGURE = {"iqr", "p25", "p75", "min", "max", "count", "ci_low", "ci_high"}

Key = tuple[str, str, str]  # (study, pace, kind)


def run_folder(path: Path, into: Path) -> Path:
    """A results folder of one device: as given, or unpacked from an archive under `into`."""
    if pack.is_archive(path):
        root = pack.unpack(path, into / path.name.removesuffix(pack.SUFFIX))
        return next(p.parent for p in root.rglob("tables") if p.is_dir())
    return path


def gpus_of(folder: Path) -> set[str]:
    """The GPU UUIDs the run's provenance sidecars name: runs that share one ran on one machine."""
    found = set()
    for sidecar in folder.glob("*/raw/**/*.json"):
        try:
            record = json.loads(sidecar.read_text())
        except (OSError, ValueError):
            continue
        for gpu in record.get("gpus") or []:
            if isinstance(gpu, dict) and gpu.get("uuid"):
                found.add(str(gpu["uuid"]))
    return found


def machines(runs: dict[str, Path]) -> dict[str, int]:
    """Each run's machine: runs whose GPUs overlap share one."""
    gpus = {name: gpus_of(folder) for name, folder in runs.items()}
    machine: dict[str, int] = {}
    for name in runs:
        same = [machine[other] for other in machine if gpus[other] & gpus[name]]
        machine[name] = same[0] if same else len(set(machine.values()))
    return machine


def point_figures(folder: Path) -> pd.DataFrame:
    """One row per point and metric of every across-process table: study, pace, kind, the point's key,
    its median over processes and its GSD over them."""
    rows = []
    across = sorted((folder / "tables").glob("*_processes.csv"))
    studies = {path.stem.removesuffix("_processes").split("_")[0] for path in across}
    # a study without an across-process table ran one process a point: its study table's medians
    alone = [p for p in sorted((folder / "tables").glob("*.csv")) if p.stem.split("_")[0] not in studies]
    for path in across + alone:
        table = pd.read_csv(path)
        if not {"metric", "statistic", "value", "unit"} <= set(table.columns):
            continue
        table = table[~table["metric"].isin(AT_REST)]
        if "per_process" in table:
            table = table[~table["per_process"].isin(NOT_A_FIGURE)]
        for _, row in table[table["statistic"] == "median"].iterrows():
            kind = levels.kind_of(str(row["unit"]))
            if kind is None:
                continue
            point = hostpaced.point_of(row.to_dict())
            study = point.get("study") or path.stem.split("_")[0]
            pace = hostpaced.pace(study, point, hostpaced.busy(table, point))
            gsd = table[(table["statistic"] == "gsd") & _same_point(table, point, row)]["value"]
            rows.append({
                "study": study, "pace": pace, "kind": kind, "key": _key(path.stem, row),
                "median": float(row["value"]), "gsd": float(gsd.iloc[0]) if len(gsd) else math.nan,
            })  # fmt: skip
    return pd.DataFrame(rows)


def _same_point(table: pd.DataFrame, point: dict[str, str], row: pd.Series) -> pd.Series:
    keep = pd.Series(True, index=table.index)
    for column, want in point.items():
        keep &= table[column].map(hostpaced._text) == want
    return keep & (table["metric"] == row["metric"])


def _key(table: str, row: pd.Series) -> str:
    point = hostpaced.point_of(row.to_dict())
    point.pop("gpu_name", None)
    point.pop("profile", None)
    return table + "|" + "|".join(f"{k}={v}" for k, v in sorted(point.items()))


def repetitions(folder: Path) -> dict[Key, list[float]]:
    """Each process's log spread over its reps (from its p25 and p75), by study, pace and kind."""
    found: dict[Key, list[float]] = defaultdict(list)
    for path in sorted((folder / "tables").glob("*.csv")):
        if path.stem.endswith("_processes"):
            continue
        table = pd.read_csv(path)
        if not {"metric", "statistic", "value", "unit"} <= set(table.columns):
            continue
        quartiles = table[table["statistic"].isin(["p25", "p75"])]
        keys = [c for c in quartiles.columns if c not in ("statistic", "value")]
        wide = quartiles.pivot_table(index=keys, columns="statistic", values="value", dropna=False)
        for index, row in wide.dropna().iterrows():
            point = dict(zip(keys, index, strict=True))
            kind = levels.kind_of(str(point["unit"]))
            low, high = sorted((float(row["p25"]), float(row["p75"])))
            if kind is None or low <= 0 or point["metric"] in AT_REST:
                continue
            text = {str(k): hostpaced._text(v) for k, v in point.items()}
            study = text.get("study") or path.stem
            pace = hostpaced.pace(study, text, hostpaced.busy(table, hostpaced.point_of(text)))
            found[(study, pace, kind)].append(math.log(high / low) / IQR_SDS)
    return found


def _rms(logs: list[float]) -> float:
    return math.exp(math.sqrt(sum(x * x for x in logs) / len(logs))) if logs else math.nan


def _sd(logs: list[float]) -> float:
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))


def _geomean(values: pd.Series) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _between_runs(point: pd.DataFrame) -> list[tuple[float, set[str]]]:
    """The log SD of one point's run medians on each machine that ran it more than once."""
    found = []
    for _, same in point.groupby("machine"):
        if same["run"].nunique() > 1:
            medians = same.groupby("run")["median"].apply(_geomean)
            found.append((_sd([math.log(v) for v in medians]), set(same["run"])))
    return found


def _between_machines(point: pd.DataFrame) -> list[tuple[float, set[str]]]:
    """The log SD of one point's machine means (each the geometric mean of its runs' medians)."""
    if point["machine"].nunique() < 2:
        return []
    means = point.groupby("machine")["median"].apply(_geomean)
    return [(_sd([math.log(v) for v in means]), set(point["run"]))]


def computed(runs: dict[str, Path]) -> pd.DataFrame:
    """Every level's pooled GSD per study, pace and kind, with the points and runs behind it."""
    machine = machines(runs)
    figures = pd.concat(
        [point_figures(folder).assign(run=name, machine=machine[name]) for name, folder in runs.items()],
        ignore_index=True,
    )
    out = []
    reps: dict[Key, list[float]] = defaultdict(list)
    for folder in runs.values():
        for key, logs in repetitions(folder).items():
            reps[key] += logs
    for (study, pace, kind), logs in reps.items():
        out.append((study, pace, kind, levels.REPETITIONS, _rms(logs), len(logs), ", ".join(runs)))
    figures = figures[figures["median"] > 0]
    for (study, pace, kind), group in figures.groupby(["study", "pace", "kind"]):
        gsd = group["gsd"].dropna()
        gsd = gsd[gsd >= 1]
        if len(gsd):
            names = ", ".join(sorted(group["run"].unique()))
            out.append(
                (study, pace, kind, levels.PROCESSES, _rms([math.log(g) for g in gsd]), len(gsd), names)
            )
        for level, spread in ((levels.RUNS, _between_runs), (levels.MACHINES, _between_machines)):
            logs, used = [], set()
            for _, point in group.groupby("key"):
                for sd, runs_used in spread(point):
                    logs.append(sd)
                    used |= runs_used
            if logs:
                out.append((study, pace, kind, level, _rms(logs), len(logs), ", ".join(sorted(used))))
    return pd.DataFrame(out, columns=["study", "pace", "kind", "level", "gsd", "points", "runs"])


def recorded() -> pd.DataFrame:
    """The levels the verdict reads, as recorded."""
    rows = [
        (level.study, level.pace, level.kind, level.level, level.gsd, level.over, "; ".join(level.runs))
        for level in levels.load().values()
    ]
    return pd.DataFrame(rows, columns=["study", "pace", "kind", "level", "recorded", "over", "recorded_runs"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="*", type=Path, help="results folders or packed runs (.tar.gz)")
    args = parser.parse_args()
    paths = args.runs or sorted((project_root() / "reference-runs").glob(f"*{pack.SUFFIX}"))
    with tempfile.TemporaryDirectory() as tmp:
        runs = {path.name.removesuffix(pack.SUFFIX): run_folder(path, Path(tmp)) for path in paths}
        found = computed(runs)
        machine_of = machines(runs)
    table = found.merge(recorded(), on=["study", "pace", "kind", "level"], how="outer")
    order = {level: i for i, level in enumerate(levels.LEVELS)}
    table = table.sort_values(
        ["study", "pace", "kind", "level"], key=lambda c: c.map(order) if c.name == "level" else c
    )
    names = {name: f"R{i + 1}" for i, name in enumerate(runs)}
    table["from"] = table["runs"].map(
        lambda used: " ".join(names[n] for n in str(used).split(", ") if n in names) or "-"
    )
    columns = ["study", "pace", "kind", "level", "gsd", "points", "from", "recorded", "over"]
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(table[columns].to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-"))
    print("\ngsd: computed from the runs (points: those pooled); recorded: what the verdict reads")
    for name, short in names.items():
        print(f"  {short}: {name} (machine {machine_of[name]})")


if __name__ == "__main__":
    main()
