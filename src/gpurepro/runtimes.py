"""What each step of a run cost: Snakemake's benchmark files (one TSV per job) as one tidy table, and a
figure of wall time per job and per step, so a reviewer sees where the hours go before rerunning.

Benchmarks live at <results>/<profile>/benchmarks/[<step>/]<job>.tsv (the same layout as the logs); the
step is the folder (the study) and the job the file name. Snakemake writes one row per job (more only
with `repeat()`; then the median is taken).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from .errors import GpureproError
from .plotting import figure, finish
from .tables import long_frame, pick, single

# (column of Snakemake's benchmark TSV, metric, unit)
BENCHMARK_METRICS = [
    ("s", "wall_time", "s"),
    ("cpu_time", "cpu_time", "s"),
    ("max_rss", "max_rss", "MB"),
    ("io_in", "io_in", "MB"),
    ("io_out", "io_out", "MB"),
    ("mean_load", "mean_load", "%"),
]
# Benchmarks of the report stage itself are written while the runtime table is made: left out.
SKIPPED_STEPS = {"report"}


def benchmark_files(paths: list[Path | str]) -> list[Path]:
    """The TSVs named, and every TSV below the folders named, except the report stage's."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.tsv") if p.parent.name not in SKIPPED_STEPS)
        elif path.is_file():
            files.append(path)
        else:
            raise GpureproError(f"benchmark file or folder {path} does not exist")
    return files


def _where(path: Path) -> dict[str, str]:
    """Profile, step and job from <profile>/benchmarks/[<step>/]<job>.tsv."""
    parts = path.parts
    if "benchmarks" in parts:
        at = len(parts) - 1 - parts[::-1].index("benchmarks")
        profile = parts[at - 1] if at > 0 else ""
        step = "/".join(parts[at + 1 : -1])
    else:
        profile, step = "", path.parent.name
    return {"profile": profile, "step": step or path.stem, "job": path.stem}


def table(paths: list[Path | str]) -> pd.DataFrame:
    """One row per job and metric (long format with units), then each step's total wall time."""
    frames = []
    for path in benchmark_files(paths):
        bench = pd.read_csv(path, sep="\t")
        keys = {"study": "runtime", **_where(path), "source_file": path.name}
        rows = [
            single(metric, float(pd.to_numeric(bench[column], errors="coerce").median()), unit)
            for column, metric, unit in BENCHMARK_METRICS
            if column in bench.columns
        ]
        frames.append(long_frame(keys, rows))
    if not frames:
        raise GpureproError("no benchmark files found: has any job of this profile run yet?")
    jobs = pd.concat(frames, ignore_index=True)
    wall = jobs[jobs["metric"] == "wall_time"]
    totals = [
        long_frame(
            {"study": "runtime", "profile": profile, "step": step, "job": "all jobs", "source_file": ""},
            [
                single("wall_time", float(group["value"].sum()), "s", "sum"),
                single("jobs", len(group), "jobs"),
            ],
        )
        for (profile, step), group in wall.groupby(["profile", "step"], sort=True)
    ]
    return pd.concat([jobs, *totals], ignore_index=True)


def plot(runtimes: pd.DataFrame) -> Figure:
    """Wall time of every job (bars coloured by step) and the total per step."""
    profile = ", ".join(sorted(str(p) for p in runtimes["profile"].dropna().unique())) or "?"
    wall = pick(runtimes, "wall_time", "value").sort_values(["step", "job"])
    wall["label"] = (wall["step"] + "/" + wall["job"]).where(wall["step"] != wall["job"], wall["job"])
    totals = pick(runtimes, "wall_time", "sum")
    fig, (jobs_ax, steps_ax) = figure(2)
    fig.set_size_inches(11, max(4.2, 0.28 * len(wall) + 1.5))
    steps = sorted(wall["step"].unique())
    sns.barplot(wall, x="value", y="label", hue="step", hue_order=steps, legend=False, ax=jobs_ax)
    jobs_ax.set(xlabel="wall time (s)", ylabel="", title="per job (Snakemake benchmark files)")
    sns.barplot(totals, x="value", y="step", hue="step", hue_order=steps, legend=False, ax=steps_ax)
    steps_ax.set(xlabel="wall time, sum over jobs (s)", ylabel="", title="per step")
    return finish(fig, f"Runtime of each job on {profile} ({totals['value'].sum():.0f} s of jobs in all)")
