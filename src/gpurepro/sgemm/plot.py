"""plot_sgemm: rate vs N per backend (median, IQR bars), energy per product above idle, each job's trace.

Where the verdict judged a claim of the figure (`plot: sgemm` in config/expected/) against a range on its
table, the rate it read has the range the verdict accepted as a box behind it and the interval it judged
the value by (at least the spread between machines it spans) as a black bar, both from the verdict's own
judge (verdict.published.drawn_on); a claim no panel shows (a ratio of two backends, a rate against the
sweep's best) is given in a note with its interval, range and verdict."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..plotting import (
    Band,
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
from ..verdict.published import Judged, judged_on

BY_BACKEND = {"x": "n", "y": "value", "hue": "backend", "style": "backend", "markers": True, "dashes": False}
FIGURE = "sgemm"  # the claims that name this figure (`plot: sgemm`)
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


def _judged(ax: Axes, readings: list[Judged], colours: dict[str, object]) -> tuple[list[Band], list[Band]]:
    """Each judged rate of one backend and N as a box and bar at its point (in its backend's colour);
    the bands drawn, and those no panel shows (ratios, rates against the sweep's best)."""
    drawn, apart = [], []
    for reading in readings:
        claim, measure = reading.claim, reading.claim.measure
        if not reading.range_tested:  # a direction alone: the verdict prints no range, none is drawn
            continue
        where = measure.where
        if (measure.metric, measure.statistic) != ("rate", "median") or claim.divide_by or claim.subtract:
            apart += [reading.band(i) for i in range(len(reading.values))]
            continue
        band, n, backend = reading.band(), float(where["n"]), str(where["backend"])
        slot, slots = (list(colours).index(backend), len(colours)) if backend in colours else (0, 1)
        x0, x1 = (n * BOX ** (2 * end / slots - 1) for end in (slot, slot + 1))
        draw_judged(ax, x0, x1, band, colours.get(backend, "0.5"))
        drawn.append(band)
    return drawn, apart


def plot(table: pd.DataFrame, traces: pd.DataFrame, readings: list[Judged] | None = None) -> Figure:
    """Draw the figure from the tidy table of `gpurepro aggregate sgemm` and the traces of read_traces.
    `readings`: the claims to draw as judged (default: the verdict's judge on the table, drawn_on)."""
    notes: list[str] = []
    readings = judged_on(FIGURE, {"sgemm": table}, notes) if readings is None else readings
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
    drawn, apart = _judged(rate_ax, readings, colours)
    if drawn:
        handles, _ = rate_ax.get_legend_handles_labels()
        rate_ax.legend(handles=handles + judged_handles(drawn, bar=True))
    if drawn or apart:
        notes.append(judged_note(JUDGED, drawn, apart))
    _traces(trace_ax, traces)
    return finish(fig, f"SGEMM FP32 on {table['profile'].iloc[0]}", notes)
