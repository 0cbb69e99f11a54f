"""plot_sgemm: rate vs N per backend (median, IQR bars), energy per product above idle, each job's trace.

Where the verdict judged a claim of the figure (`plot: sgemm` in config/expected/) against a range on its
table, the rate it read has the range the verdict accepted as a box behind it and the interval it judged
the value by (at least the spread between machines it spans) as a black bar, both from the verdict's own
judge (plot_claims.sgemm_marks, which `gpurepro plot` hands in); a claim no panel shows (a ratio of
two backends, a rate against the sweep's best) is given in a note with its interval, range and verdict."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..plotting import (
    Band,
    Marks,
    draw_judged,
    figure,
    finish,
    iqr_rows,
    judged_handles,
    judged_note,
    log_where_wide,
    not_reported,
    ticks_at,
    unit,
)
from ..tables import pick

BY_BACKEND = {"x": "n", "y": "value", "hue": "backend", "style": "backend", "markers": True, "dashes": False}
JUDGED = (
    "where the verdict judged a claim against a range, the rate it read has the range it accepted as a box "
    "behind it and the interval it judged the value by (at least the spread between machines it spans) as "
    "a black bar"
)
# The boxes at one N span N / BOX to N x BOX, split between the backends in their order (each its own slot,
# side by side): about as wide on a log axis as on a linear one over these sizes
BOX = 1.08


def read_traces(paths: list[Path | str]) -> pd.DataFrame:
    """The jobs' telemetry traces as one table, each sample named by its job."""
    traces = [pd.read_csv(path).assign(job=Path(path).name.split(".")[0]) for path in paths]
    return pd.concat(traces, ignore_index=True) if traces else pd.DataFrame()


def _traces(ax: Axes, traces: pd.DataFrame) -> None:
    """Power where the device reports it; CPU utilisation where it does not (no RAPL)."""
    if traces.empty:
        return not_reported(ax, "telemetry: no trace given")
    power = traces["power_w"].notna().any()
    seconds = traces["time_unix_s"] - traces.groupby("job")["time_unix_s"].transform("min")
    sns.lineplot(traces, x=seconds, y="power_w" if power else "util_pct", hue="job", estimator=None,
                 linewidth=0.8, ax=ax)  # fmt: skip
    ax.set(xlabel="time in job (s)", ylabel="power (W)" if power else "utilisation (%)", title="telemetry")


def _judged(ax: Axes, marks: Marks, colours: dict[str, object]) -> tuple[list[Band], list[Band]]:
    """Each judged rate of one backend and N as a box in its backend's slot beside N and the verdict's
    bar in its middle; the bands drawn, and those no panel shows (with any whose point is not here)."""
    drawn, apart = [], list(marks.apart)
    for (backend, n), band in marks.placed.items():
        if backend not in colours:
            apart.append(band)
            continue
        slot, slots = list(colours).index(backend), len(colours)
        x0, x1 = (n * BOX ** (2 * end / slots - 1) for end in (slot, slot + 1))
        draw_judged(ax, x0, x1, band, colours[backend])
        drawn.append(band)
    return drawn, apart


def plot(table: pd.DataFrame, traces: pd.DataFrame, marks: Marks | None = None) -> Figure:
    """Draw the figure from the tidy table of `gpurepro aggregate sgemm` and the traces of read_traces.
    `marks`: the claims to draw as the verdict judged them (plot_claims.sgemm_marks; none if not given)."""
    marks = Marks() if marks is None else marks
    notes = list(marks.notes)
    fig, (rate_ax, energy_ax, trace_ax) = figure(3)
    backends = sorted(table["backend"].unique())
    colours = dict(zip(backends, sns.color_palette("colorblind", len(backends)), strict=True))
    sns.lineplot(iqr_rows(table, "rate"), **BY_BACKEND, hue_order=backends, palette=colours,
                 estimator="median", errorbar=("pi", 100), err_style="bars", err_kws={"capsize": 3},
                 ax=rate_ax)  # fmt: skip
    rate_ax.set(xlabel="N", ylabel=f"{unit(table, 'rate')} (median, IQR bars)", title="rate")
    reliable = pick(table, "energy_window_reliable", "value").rename(columns={"value": "reliable"})
    energy = pick(table, "energy_per_op", "above_idle").merge(reliable[["backend", "n", "reliable"]])
    energy = energy[energy["reliable"] > 0].dropna(subset=["value"])  # too short a window is not drawn
    if energy.empty:
        not_reported(energy_ax, "energy per product: not reported by this device (no NVML or RAPL counter)")
    else:
        sns.lineplot(energy, **BY_BACKEND, hue_order=backends, palette=colours, errorbar=None, ax=energy_ax)
    energy_ax.set(xlabel="N", ylabel="J per product, above idle", title="energy per product")
    for ax in (rate_ax, energy_ax):
        log_where_wide(ax)
        ticks_at(ax, sorted(int(n) for n in table["n"].unique()))
    drawn, apart = _judged(rate_ax, marks, colours)
    if drawn:
        handles, _ = rate_ax.get_legend_handles_labels()
        rate_ax.legend(handles=handles + judged_handles(drawn, bar=True))
    if drawn or apart:
        notes.append(judged_note(JUDGED, drawn, apart))
    _traces(trace_ax, traces)
    return finish(fig, f"SGEMM FP32 on {table['profile'].iloc[0]}", notes)
