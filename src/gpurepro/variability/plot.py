"""plot_variability: per-GPU rate relative to the median GPU, rate against power, SM clock and temperature
per rep, and the per-rep time series of every GPU and run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..plotting import figure, not_reported, plt, save
from .summary import gpu_labels

SCATTERS = [("power_w_median", "power (W)"), ("sm_clock_mhz_median", "SM clock (MHz)"),
            ("temperature_c_median", "temperature (C)")]  # fmt: skip


def plot(reps: pd.DataFrame, out: Path | str) -> None:
    profile, n = reps["profile"].iloc[0], int(reps["n"].iloc[0])
    reps = reps.assign(gpu=gpu_labels(reps))
    title = f"SGEMM variability on {profile}, N={n} ({reps['gpu'].nunique()} device(s))"
    fig, axes = figure(3, title, rows=2)
    relative_ax, time_ax, energy_ax, *scatter_axes = axes
    colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"] * 4)
    for backend, rows in reps.groupby("backend"):
        per_gpu = rows.groupby("gpu")["tflops"]
        relative = per_gpu.median() / per_gpu.median().median()
        relative_ax.plot(relative.index, relative.values, marker="o", linestyle="none", label=str(backend))
        for (gpu, run), series in rows.groupby(["gpu", "run"]):
            time_ax.plot(series["rep"], series["ms"], lw=0.8, label=f"{backend} gpu {gpu} run {run}")
        energy = rows.groupby("gpu")["energy_per_rep_j"].median()
        if energy.notna().any():
            energy_ax.plot(energy.index, energy.values, marker="s", linestyle="none", label=str(backend))
        for gpu, points in rows.groupby("gpu"):
            color = next(colors)
            throttled = points["throttled"].astype(bool)
            for ax, (column, _label) in zip(scatter_axes, SCATTERS, strict=True):
                # one colour per backend and GPU; crosses are reps with a power or thermal clock event
                for mask, marker, suffix in ((~throttled, "o", ""), (throttled, "x", ", throttled")):
                    if mask.any() and points[column].notna().any():
                        ax.scatter(
                            points.loc[mask, column],
                            points.loc[mask, "tflops"],
                            s=10,
                            marker=marker,
                            color=color,
                            label=f"{backend} gpu {gpu}{suffix}",
                        )
    relative_ax.axhline(1.0, color="grey", lw=0.8)
    relative_ax.set(xlabel="GPU", ylabel="median rate / median GPU's", title="per-GPU performance")
    relative_ax.legend(fontsize="small")
    time_ax.set(xlabel="rep", ylabel="ms per SGEMM", title="every rep of every run")
    time_ax.legend(fontsize="x-small")
    if energy_ax.lines:
        energy_ax.set(xlabel="GPU", ylabel="J per SGEMM (NVML energy counter)", title="energy per rep")
        energy_ax.legend(fontsize="small")
    else:
        not_reported(energy_ax, "energy")
    for ax, (column, label) in zip(scatter_axes, SCATTERS, strict=True):
        if reps[column].isna().all():
            not_reported(ax, label)
        else:
            ax.set(xlabel=label, ylabel="TFLOP/s")
            ax.legend(fontsize="x-small")
    save(fig, out)
