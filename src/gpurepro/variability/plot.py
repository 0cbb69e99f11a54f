"""plot_variability: per-GPU rate relative to the median GPU and energy per rep (median, min-max bars),
every rep of every run, and rate against power, SM clock and temperature per rep, throttled reps ringed."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..plotting import figure, finish, not_reported
from .summary import gpu_labels

SCATTERS = [("power_w_median", "power (W)"), ("sm_clock_mhz_median", "SM clock (MHz)"),
            ("temperature_c_median", "temperature (C)")]  # fmt: skip
BY_GPU = {"hue": "gpu", "style": "backend"}


def _per_gpu(ax: Axes, reps: pd.DataFrame, column: str) -> None:
    """Median and min-max over reps per GPU; greys for the backends, so no colour means two things."""
    backends = sorted(reps["backend"].unique())
    sns.pointplot(
        reps, x="gpu", y=column, hue="backend", hue_order=backends, estimator="median", errorbar=("pi", 100),
        dodge=0.4 if len(backends) > 1 else False, linestyle="none", capsize=0.1, ax=ax,
        palette=sns.color_palette("blend:#222,#999", len(backends)), markers=["o", "X", "s"][: len(backends)],
    )  # fmt: skip


def _scatters(axes: list[Axes], reps: pd.DataFrame) -> None:
    """Rate against each telemetry reading per rep, a ring round each throttled rep; one legend."""
    throttled, legend = reps[reps["throttled"]], True
    for ax, (column, label) in zip(axes, SCATTERS, strict=True):
        if reps[column].isna().all():
            not_reported(ax, f"{label}: not reported by this device")
            continue
        sns.scatterplot(reps, x=column, y="tflops", **BY_GPU, s=16, legend=legend, ax=ax)
        ax.scatter(throttled[column], throttled["tflops"], s=70, facecolors="none", edgecolors="black",
                   linewidths=0.8, label="throttled rep" if len(throttled) else None)  # fmt: skip
        ax.set(xlabel=label, ylabel="TFLOP/s")
        if legend:
            ax.legend()  # again, to take in the rings
        legend = False


def plot(reps: pd.DataFrame) -> Figure:
    """Draw the figure from the reps table of `gpurepro aggregate variability`."""
    reps = reps.assign(gpu=gpu_labels(reps), throttled=reps["throttled"].astype(bool))
    median_gpu = reps.groupby(["backend", "gpu"])["tflops"].median().groupby("backend").median()
    reps["relative_rate"] = reps["tflops"] / reps["backend"].map(median_gpu)  # the original's normalisation
    fig, (relative_ax, time_ax, energy_ax, *scatter_axes) = figure(3, rows=2)
    _per_gpu(relative_ax, reps, "relative_rate")
    relative_ax.axhline(1.0, color="grey", linewidth=0.8)
    relative_ax.set(xlabel="GPU", ylabel="rate / median GPU's median rate", title="per-GPU performance")
    sns.lineplot(reps, x="rep", y="ms", **BY_GPU, units="run", estimator=None, linewidth=0.8, ax=time_ax)
    time_ax.set(xlabel="rep", ylabel="ms per SGEMM", title="every rep of every run")
    if reps["energy_per_rep_j"].isna().all():
        not_reported(energy_ax, "energy per rep: not reported by this device")
    else:
        _per_gpu(energy_ax, reps, "energy_per_rep_j")
        energy_ax.set(xlabel="GPU", ylabel="J per SGEMM (NVML energy counter)", title="energy per rep")
    _scatters(scatter_axes, reps)
    profile, n = reps["profile"].iloc[0], int(reps["n"].iloc[0])
    return finish(fig, f"SGEMM variability on {profile}, N={n} ({reps['gpu'].nunique()} device(s))")
