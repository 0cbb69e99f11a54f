"""plot_variability: per-GPU rate relative to the median GPU and energy per rep (median, min-max bars),
every rep of every run, and rate against power, SM clock and temperature per rep.

Throttling is said once, in words, under the figure: how many reps of how many GPUs NVML reported a
throttle reason for, which reasons (the power cap, thermal slowdown, ...) and at what median power. Where
throttled reps are the exception they are also ringed, which tells them from the rest; where they are most
of the reps (a study at an H100's 700 W cap throttles every rep) a ring round every point would say
nothing a sentence does not, and the rings are left out."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..plotting import figure, finish, not_reported
from .summary import gpu_labels

# Throttle reasons (nvml.THROTTLE_MASK) in words; idle and clock settings are not throttling.
REASON_WORDS = {
    "sw_power_cap": "the power cap",
    "hw_slowdown": "hardware slowdown",
    "sw_thermal_slowdown": "thermal slowdown",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "hw_power_brake_slowdown": "the power brake",
}
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


def throttling(reps: pd.DataFrame) -> tuple[str, bool]:
    """The throttling of the reps in words ("" where none was), and whether to ring the throttled reps:
    only where they are fewer than half, so a ring tells a rep apart."""
    throttled = reps[reps["throttled"]]
    if throttled.empty:
        return "", False
    names = throttled.get("clock_event_names", pd.Series(dtype=object)).dropna().astype(str)
    reasons = names.str.split("|").explode()
    counts = reasons[reasons.isin(list(REASON_WORDS))].value_counts()
    why = (
        ", ".join(f"{REASON_WORDS[r]} ({r}) in {n} reps" for r, n in counts.items()) or "reason not recorded"
    )
    gpus = f"{throttled['gpu'].nunique()} of {reps['gpu'].nunique()} GPU(s)"
    power = throttled["power_w_median"].median()
    at = f", at a median {power:.0f} W" if pd.notna(power) else ""
    ring = len(throttled) < len(reps) / 2
    share = "every rep" if len(throttled) == len(reps) else f"{len(throttled)} of {len(reps)} reps"
    text = f"throttled: {share} on {gpus}, by {why}{at}"
    return text + ("; ringed in the scatter panels" if ring else "; not ringed, being most of the reps"), ring


def _scatters(axes: list[Axes], reps: pd.DataFrame, ring: bool) -> None:
    """Rate against each telemetry reading per rep, a ring round each throttled rep where `ring`; one
    legend."""
    throttled, legend = reps[reps["throttled"] & ring], True
    for ax, (column, label) in zip(axes, SCATTERS, strict=True):
        if reps[column].isna().all():
            not_reported(ax, f"{label}: not reported by this device")
            continue
        sns.scatterplot(reps, x=column, y="tflops", **BY_GPU, s=16, legend=legend, ax=ax)
        if len(throttled):
            ax.scatter(throttled[column], throttled["tflops"], s=70, facecolors="none", edgecolors="black",
                       linewidths=0.8, label="throttled rep")  # fmt: skip
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
    said, ring = throttling(reps)
    _scatters(scatter_axes, reps, ring)
    profile, n = reps["profile"].iloc[0], int(reps["n"].iloc[0])
    title = f"SGEMM variability on {profile}, N={n} ({reps['gpu'].nunique()} device(s))"
    return finish(fig, title, [said] if said else [])
