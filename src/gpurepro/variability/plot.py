"""plot_variability: per-GPU rate relative to the median GPU and energy per rep (median, min-max bars),
every rep of every run, and rate against power, SM clock and temperature per rep.

Throttling is said once, in words, under the figure: how many reps of how many GPUs NVML reported a
throttle reason for, which reasons (the power cap, thermal slowdown, ...) and at what median power. Where
throttled reps are the exception they are also ringed, which tells them from the rest; where they are most
of the reps (a study at an H100's 700 W cap throttles every rep) a ring round every point would say
nothing a sentence does not, and the rings are left out.

The spread across GPUs (slowest over fastest, in %, of each backend's time and power: the summary's
spread_pct with its 95% interval) has a panel of its own; where the verdict judged a claim of the figure
(`plot: variability` in config/expected/) against a range on the summary, its spread has the range the
verdict accepted as a box behind it and, as its bar, the interval the verdict judged it by, both from the
verdict's own judge (plot_claims.variability_marks, which `gpurepro plot` hands in). A judged claim no
panel shows (a per-GPU figure, the lowest card against the median) is given in a note with its interval,
range and verdict."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..plotting import (
    Band,
    Marks,
    draw_judged,
    figure,
    finish,
    judged_handles,
    judged_note,
    not_reported,
    yerr,
)
from .summary import gpu_labels, summarise

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
ACROSS = "across gpus"  # the summary's scope of a spread across the node's GPUs
SPREADS = ("time", "power")  # the spreads the panel draws, in its order (the claims read these two)
SPREAD_COLOURS = dict(zip(SPREADS, ("C0", "C1"), strict=True))
JUDGED = (
    "spread across GPUs: where the verdict judged a claim against a range, the spread it read has the "
    "range it accepted as a box behind it and the interval it judged the value by as its bar; elsewhere "
    "the bar is the summary's 95% interval"
)


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


def _spreads(summary: pd.DataFrame, n: int) -> pd.DataFrame:
    """The spread across GPUs of each backend's time and power at the figure's N: one row per (metric,
    backend) with its value and 95% interval ends (NaN where the summary has none)."""
    rows = summary[(summary["scope"] == ACROSS) & (summary["n"] == n) & summary["metric"].isin(SPREADS)]
    wide = rows.pivot_table(index=["metric", "backend"], columns="statistic", values="value", dropna=False)
    wide = wide.reindex(columns=["spread_pct", "spread_pct_ci_low", "spread_pct_ci_high"]).reset_index()
    order = {metric: i for i, metric in enumerate(SPREADS)}
    return wide.dropna(subset=["spread_pct"]).sort_values(["metric", "backend"], key=lambda c: c.map(order))


def _split(marks: Marks, spreads: pd.DataFrame, n: int) -> tuple[dict[tuple[str, str], Band], list[Band]]:
    """The judged spreads the panel shows, by (metric, backend), and the bands of those it does not
    (no panel's, or a spread at another N or of a backend not measured here)."""
    shown = set(zip(spreads["metric"], spreads["backend"], strict=True))
    judged, apart = {}, list(marks.apart)
    for (metric, backend, at_n), band in marks.placed.items():
        if at_n == n and (metric, backend) in shown:
            judged[(metric, backend)] = band
        else:
            apart.append(band)
    return judged, apart


def _spread_panel(ax: Axes, spreads: pd.DataFrame, judged: dict[tuple[str, str], Band]) -> list[Band]:
    """The spreads per backend (x), time and power dodged, each with its interval; where a claim reads
    one, its box behind it and its bar the interval the verdict judged it by. Returns the bands drawn."""
    backends = sorted(spreads["backend"].unique())
    drawn, width = [], 0.6
    step = width / len(SPREADS)
    for row in spreads.itertuples():
        x = backends.index(row.backend) - width / 2 + step * (SPREADS.index(row.metric) + 0.5)
        band = judged.get((row.metric, row.backend))
        low, high = band.interval if band else (row.spread_pct_ci_low, row.spread_pct_ci_high)
        ax.errorbar([x], [row.spread_pct], yerr=yerr([row.spread_pct], [low], [high]), fmt="o",
                    color=SPREAD_COLOURS[row.metric], capsize=4, elinewidth=1.4, zorder=3)  # fmt: skip
        if band:
            draw_judged(ax, x - step / 2, x + step / 2, band, SPREAD_COLOURS[row.metric], bar=False)
            drawn.append(band)
    ax.set_xticks(range(len(backends)), backends)
    ax.set_xlim(-0.6, len(backends) - 0.4)
    ax.set_ylim(bottom=0)
    ax.set(
        xlabel="backend", ylabel="spread across GPUs (%): slowest over fastest", title="spread across GPUs"
    )
    handles = [
        Line2D([], [], color=SPREAD_COLOURS[metric], marker="o", linestyle="none", label=metric)
        for metric in SPREADS
        if metric in set(spreads["metric"])
    ]
    ax.legend(handles=handles + judged_handles(drawn), fontsize="small")
    return drawn


def plot(reps: pd.DataFrame, summary: pd.DataFrame | None = None, marks: Marks | None = None) -> Figure:
    """Draw the figure from the reps table of `gpurepro aggregate variability` and its summary (default:
    made from the reps as the aggregation makes it). `marks`: the claims to draw as the verdict judged
    them (plot_claims.variability_marks; none if not given)."""
    marks = Marks() if marks is None else marks
    notes = list(marks.notes)
    summary = summarise(reps) if summary is None else summary
    reps = reps.assign(gpu=gpu_labels(reps), throttled=reps["throttled"].astype(bool))
    median_gpu = reps.groupby(["backend", "gpu"])["tflops"].median().groupby("backend").median()
    reps["relative_rate"] = reps["tflops"] / reps["backend"].map(median_gpu)  # the original's normalisation
    fig, (relative_ax, time_ax, energy_ax, spread_ax, *scatter_axes, spare_ax) = figure(4, rows=2)
    spare_ax.set_axis_off()
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
    spreads = _spreads(summary, n)
    judged, apart = _split(marks, spreads, n)
    if spreads.empty:
        not_reported(spread_ax, "spread across GPUs: one GPU measured, no spread between GPUs")
    drawn = _spread_panel(spread_ax, spreads, judged) if len(spreads) else []
    notes += [said] if said else []
    if drawn or apart:
        notes.append(judged_note(JUDGED, drawn, apart))
    title = f"SGEMM variability on {profile}, N={n} ({reps['gpu'].nunique()} device(s))"
    return finish(fig, title, notes)
