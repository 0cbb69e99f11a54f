"""plot_hfta: the HFTA claims in one look, and the curves behind them. One row of panels per precision.

First, the fused array's speedups (tables/hfta_speedup.csv, statistic `max`: its peak throughput over B
against each baseline's own peak) over serial, concurrent and MPS training, per workload, each with its
95% interval across processes; where a claim (config/expected/hfta.yaml) reads the point, its bar is the
interval the verdict judged it by (at least the spread between machines it spans) and a box behind it the
range the verdict accepted (the paper's range with its tolerance), both from the verdict's own judge on
these tables (verdict.published.drawn_on): the comparison the verdict makes, drawn in quick runs too, where
the curves are single points; a speedup the verdict reads as host-dependent (over a host-paced baseline)
has its box hatched and labelled so. Stock steps on both sides, as the paper compared them; graphed and
compiled speedups are in the table. The other judged claims of the figure (this project's own fused
throughput and speedup at B=32) are given in a note with their interval, range and verdict.

Then, as HFTA's figures, one panel per workload: throughput normalised over stock serial fp32 against B,
one colour and marker per mode and one line style per step (stock, graphed, compiled), each point the
median over its processes with the 95% interval across them (process_stats.across_processes, the interval
the speedups and the verdict use). Points that ran out of memory, failed or were skipped are listed under
the figure; a missing line end is where B stopped fitting.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..plotting import (
    Band,
    apart_note,
    draw_judged,
    failures,
    figure,
    finish,
    judged_handles,
    judged_note,
    not_reported,
    nothing_ran,
    plain_log_ticks,
    ticks_at,
    yerr,
)
from ..process_stats import across_processes
from ..verdict.published import Judged, judged_on
from . import MODES, PRECISIONS, STEP_STOCK, WORKLOADS
from .summary import BASELINES, speedups, step_order

# What each throughput axis plots. Where a run has no serial fp32 point (a quick run trains fp16 only) the
# panels plot raw throughput, and the title, not the axis label, says why (the caption, too).
YLABELS = {
    "normalised_throughput": "throughput / stock serial fp32 at the same B",
    "throughput": "throughput (samples/s)",
}
UNNORMALISED = "raw samples/s: this run has no serial fp32 point to normalise by"
TITLE = "HFTA training on {profile}: the fused array's speedups and throughput over B"
SPEEDUP_YLABEL = "speedup: fused peak / baseline's peak"
# One colour and marker per mode, the same in every panel: a baseline's speedup point wears its mode's.
COLOURS = dict(zip(MODES, sns.color_palette("colorblind", len(MODES)), strict=True))
MARKERS = dict(zip(MODES, ("o", "s", "D", "^"), strict=True))
DASHES = {"stock": "", "graphed": (4, 2), "compiled": (1, 1.5)}  # seaborn's dash specs, per step
FIGURE = "hfta"  # the claims that name this figure (`plot: hfta`): the paper's and this project's own
# a claim's reading: the range it accepted (low, high), what the paper's range spans, whether one workload
# here is held to its lower end alone, the value it read, the interval it judged that value by, its status
# and whether its magnitude is host-dependent (a host-paced baseline: shown, not counted)
RANGE_COLUMNS = ["baseline", "low", "high", "across", "one_sided", "value", "interval_low", "interval_high",
                 "status", "host_dependent"]  # fmt: skip
INTERVAL = "95% interval across processes"
JUDGED = (
    "bars: where a claim reads the point, the interval the verdict judged it by (at least the spread between "
    "machines it spans); elsewhere the 95% interval across processes"
)
CURVE_JUDGED = (
    "throughput panels: where a claim reads a point, a box spans the range the verdict accepted and a black "
    "bar the interval it judged the value by"
)
# The speedup table's processes behind the fused point and the baseline's, written beside each speedup.
PROCESSES = ["processes", "baseline_processes"]
COUNTS = "a speedup's (n:m): the processes behind the fused array's point and the baseline's"
CURVE_BOX = 1.15  # a judged throughput's box spans B / CURVE_BOX to B x CURVE_BOX on the log-2 axis


def _peak(reading: Judged) -> bool:
    """Whether a reading is a stock-over-stock peak speedup (the paper's comparison), which the speedup
    panel draws; the others (a speedup at the fused array's best B, a throughput) are given in words."""
    measure, where = reading.claim.measure, reading.claim.measure.where
    return (
        measure.table == "hfta_speedup"
        and (measure.metric, measure.statistic) == ("speedup", "max")
        and where.get("step", STEP_STOCK) == STEP_STOCK
        and where.get("baseline_step", STEP_STOCK) == STEP_STOCK
    )


def _curve_point(reading: Judged) -> tuple[str, str, str, int] | None:
    """(workload, precision, mode, B) of a judged raw throughput of one stock point (this project's own
    fused throughput at B=32), which a curve panel of raw samples/s draws; None for any other reading."""
    measure, where = reading.claim.measure, reading.claim.measure.where
    if (
        measure.metric != "throughput"
        or where.get("step", STEP_STOCK) != STEP_STOCK
        or len(reading.values) != 1
    ):
        return None
    keys = [where.get(key) for key in ("workload", "precision", "mode", "b")]
    return None if None in keys else (str(keys[0]), str(keys[1]), str(keys[2]), int(keys[3]))


def _draw_curve_bands(ax: Axes, readings: list[Judged], workload: str, precision: str) -> list[Judged]:
    """Each judged throughput of this panel's workload and precision as a box and the verdict's bar at its
    B, in its mode's colour; the readings drawn."""
    drawn = []
    for reading in readings:
        point = _curve_point(reading)
        if point is None or point[:2] != (workload, precision) or point[2] not in COLOURS:
            continue
        b = point[3]
        draw_judged(ax, b / CURVE_BOX, b * CURVE_BOX, reading.band(), COLOURS[point[2]])
        drawn.append(reading)
    return drawn


def judged_ranges(readings: list[Judged]) -> pd.DataFrame:
    """Each stock-over-stock peak speedup claim as the verdict judged it (RANGE_COLUMNS): the range it
    accepted, as it prints it (the paper's range with its tolerance, to the stated high end), and the
    interval it judged the value by. `across`: what the paper's range spans; `one_sided`: whether one
    workload here is held to its lower end alone."""
    rows = []
    for reading in filter(_peak, readings):
        where, expected = reading.claim.measure.where, reading.claim.expected
        rows += [
            {"baseline": where["baseline"], "low": reading.accepted[0], "high": reading.accepted[1],
             "across": expected.across or "the paper's models", "one_sided": expected.across is not None,
             "value": value, "interval_low": low, "interval_high": high, "status": reading.status,
             "host_dependent": reading.host_dependent}
            for value, (low, high) in zip(reading.values, reading.intervals, strict=True)
        ]  # fmt: skip
    return pd.DataFrame(rows, columns=RANGE_COLUMNS)


def _speedup_points(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (precision, workload, baseline) of the stock-over-stock peak speedups: value, low,
    high (NaN where a side ran in one process), and the processes behind each side where the table says."""
    keys, statistics = ["precision", "workload", "baseline"], ["max", "max_ci_low", "max_ci_high"]
    rows = summary[
        (summary["metric"] == "speedup")
        & (summary["step"] == STEP_STOCK)
        & (summary["baseline_step"] == STEP_STOCK)
        & summary["statistic"].isin(statistics)
    ]
    if rows.empty:
        return pd.DataFrame(columns=[*keys, *statistics, *PROCESSES])
    wide = rows.pivot_table(index=keys, columns="statistic", values="value", dropna=False)
    wide = wide.reindex(columns=statistics).reset_index().dropna(subset=["max"])
    counts = rows[rows["statistic"] == "max"].reindex(columns=[*keys, *PROCESSES])
    return wide.merge(counts, on=keys, how="left")


def _draw_speedups(ax: Axes, points: pd.DataFrame, ranges: pd.DataFrame, workloads: list[str]) -> list[str]:
    """The speedups per workload (x), each baseline dodged within it in its mode's colour and marker,
    with its interval, before its paper range's box; a line at 1 (no faster). The baselines whose points
    have no interval are returned, for the note."""
    baselines = [b for b in BASELINES if b in set(points["baseline"])]
    width = 0.7
    step = width / len(baselines)
    no_interval = []
    for i, baseline in enumerate(baselines):
        these = points[points["baseline"] == baseline]
        x = np.array([workloads.index(w) for w in these["workload"]]) - width / 2 + step * (i + 0.5)
        value = these["max"].to_numpy(dtype=float)
        low = these["max_ci_low"].to_numpy(dtype=float, copy=True)
        high = these["max_ci_high"].to_numpy(dtype=float, copy=True)
        published = ranges[ranges["baseline"] == baseline]
        for _, reading in published.iterrows():  # the point a claim reads: the interval it judged
            read = np.isclose(value, reading["value"])
            low[read], high[read] = reading["interval_low"], reading["interval_high"]
        ax.errorbar(
            x, value, yerr=yerr(value, low, high), fmt=MARKERS[baseline],
            color=COLOURS[baseline], markersize=7, capsize=4, linestyle="none", elinewidth=1.4, zorder=3,
        )  # fmt: skip
        for xi, v, n, m in zip(x, value, these["processes"], these["baseline_processes"], strict=True):
            counts = f" ({int(n)}:{int(m)})" if pd.notna(n) and pd.notna(m) else ""
            ax.annotate(
                f"{v:.3g}x{counts}",
                (xi, v),
                xytext=(5, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
        for reading in published.itertuples():  # its bar is the point's own, drawn above
            for xi in x[np.isclose(value, reading.value)]:
                draw_judged(ax, xi - step / 2, xi + step / 2, _band(reading), COLOURS[baseline], bar=False)
        no_interval += [
            f"{w} over {baseline}"
            for w, lo in zip(these["workload"], low, strict=True)
            if not math.isfinite(lo)
        ]
    ax.axhline(1.0, color="black", linewidth=0.6, zorder=2)
    ax.set_yscale("log")  # a speedup is a ratio: 2x above 1 lies as far as 2x below
    plain_log_ticks(ax.yaxis)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_xlim(-0.6, len(workloads) - 0.4)
    ax.set(xlabel="workload", ylabel=SPEEDUP_YLABEL)
    return no_interval


def _band(reading: object) -> Band:
    """A row of judged_ranges() as the band plotting.draw_judged draws: the range's lower end, which one
    workload here is held to, drawn as what it is."""
    return Band(
        value=reading.value, interval=(reading.interval_low, reading.interval_high),
        accepted=(reading.low, reading.high), host_dependent=bool(reading.host_dependent),
        one_sided=bool(reading.one_sided),
    )  # fmt: skip


def _median(values: pd.Series) -> float:
    return across_processes(values.to_numpy(dtype=float)).value


def _interval(values: pd.Series) -> tuple[float, float]:
    interval = across_processes(values.to_numpy(dtype=float))
    return interval.low, interval.high


def _draw_curves(ax: Axes, points: pd.DataFrame, steps: list[str]) -> None:
    """Throughput against B: one line per mode and step, each point the median over its processes and
    its bars the interval across them (none from one process)."""
    for step in steps:
        rows = points[points["step"] == step]
        modes = [m for m in MODES if m in set(rows["mode"])]
        if not modes:
            continue
        sns.lineplot(
            rows, x="b", y="value", hue="mode", hue_order=modes, style="mode", style_order=modes,
            palette=COLOURS, markers=MARKERS, dashes={m: DASHES.get(step, "") for m in modes},
            estimator=_median, errorbar=_interval, err_style="bars", err_kws={"capsize": 3},
            markersize=7, legend=False, ax=ax,
        )  # fmt: skip


def _legend(fig: Figure, points: pd.DataFrame, steps: list[str], ranges: pd.DataFrame) -> None:
    """One legend for every panel: each mode's colour and marker (a line only where the mode has a
    curve, not a single B), the steps' line styles where there are several, and the paper's range."""
    spans = points.groupby("mode")["b"].nunique()
    handles = [
        Line2D(
            [], [], color=COLOURS[m], marker=MARKERS[m], linestyle="-" if spans[m] > 1 else "none", label=m
        )
        for m in MODES
        if m in spans.index
    ]
    if len(steps) > 1:
        handles += [
            Line2D([], [], color="0.3", linestyle=(0, DASHES[s]) if DASHES.get(s) else "-", label=f"{s} step")
            for s in steps
        ]
    if len(ranges):
        across = "; ".join(dict.fromkeys(ranges["across"]))
        label = f"accepted as judged here: the paper's range across {across}, with its tolerance"
        handles += judged_handles([_band(reading) for reading in ranges.itertuples()], label)
        if ranges["one_sided"].any():
            label = "its lower end: what one workload on this GPU is held to"
            handles.append(Line2D([], [], color="0.3", linewidth=2, label=textwrap.fill(label, 30)))
    fig.legend(
        handles=handles, title=f"mode (median over processes,\n{INTERVAL})", loc="center left",
        bbox_to_anchor=(1.0, 0.5), frameon=False,
    )  # fmt: skip


def _panel_names(table: pd.DataFrame) -> pd.Series:
    batch = table["batch_size"].map(lambda b: f", batch {int(b)} per model" if pd.notna(b) else "")
    return table["workload"] + batch


def _ordered(present: set[str], order: tuple[str, ...]) -> list[str]:
    return [v for v in order if v in present] + sorted(present - set(order))


def plot(
    table: pd.DataFrame,
    summary: pd.DataFrame | None = None,
    ranges: pd.DataFrame | None = None,
    processes: pd.DataFrame | None = None,
    reference: pd.DataFrame | None = None,
) -> Figure:
    """Draw the figure from the tidy table of `gpurepro aggregate hfta` and its speedup summary
    (tables/hfta_speedup.csv; default: made from the table as the aggregation makes it). `ranges`: the
    claims' readings to draw (RANGE_COLUMNS; default: judged_ranges(), the verdict's on these tables);
    `processes`: the across-process table (tables/hfta_processes.csv), which this project's own fused
    throughput claim reads (given in the note with the other judged claims no panel shows); `reference`:
    the run's reference rates (tables/reference.csv), which that claim's scaling from the H100 needs."""
    if table.empty or "workload" not in table:
        raise ValueError("the table has no hfta rows")
    table = table.assign(panel=_panel_names(table), step=table.get("step", STEP_STOCK))  # older tables: stock
    missing = table[(table["metric"] == "throughput") & (table["status"] != "ok")]
    notes = failures(missing, "{workload} {mode} {step} {precision} B={b} run {run}")
    title = TITLE.format(profile=table["profile"].iloc[0])
    ran = table[(table["status"] == "ok") & table["value"].notna()]
    metric = "normalised_throughput" if (ran["metric"] == "normalised_throughput").any() else "throughput"
    points = ran[ran["metric"] == metric]
    if metric == "throughput":
        title = f"{title} ({UNNORMALISED})"
    if points.empty:
        return nothing_ran(title, notes)
    summary = speedups(table[table["metric"] == "throughput"]) if summary is None else summary
    given = {"hfta": table, "hfta_speedup": summary, "hfta_processes": processes, "reference": reference}
    readings = judged_on(FIGURE, {name: t for name, t in given.items() if t is not None}, notes)
    ranges = judged_ranges(readings) if ranges is None else ranges
    curves: list[Judged] = []  # the judged throughputs a panel of raw samples/s draws
    speedup = _speedup_points(summary)
    ranges = ranges[ranges["baseline"].isin(speedup["baseline"])]  # a baseline not measured has no box
    precisions = _ordered(set(points["precision"]), PRECISIONS)
    workloads = _ordered(set(table["workload"]), WORKLOADS)
    steps = step_order(points["step"])
    panels = table.drop_duplicates("workload").set_index("workload")["panel"]
    fig, axes = figure(1 + len(workloads), len(precisions))
    no_interval = []
    for row, precision in enumerate(precisions):
        speed_ax, *curve_axes = axes[row * (1 + len(workloads)) : (row + 1) * (1 + len(workloads))]
        speed_ax.set_title(f"fused array's speedup over each baseline\n{precision}, stock steps")
        these = speedup[speedup["precision"] == precision]
        if these.empty:
            not_reported(speed_ax, "no speedup: the fused array or every baseline did not run (listed below)")
        else:
            shown = _ordered(set(these["workload"]), WORKLOADS)
            no_interval += [f"{precision} {w}" for w in _draw_speedups(speed_ax, these, ranges, shown)]
        for ax, workload in zip(curve_axes, workloads, strict=True):
            ax.set_title(f"{panels[workload]}, {precision}")
            rows = points[(points["precision"] == precision) & (points["workload"] == workload)]
            if rows.empty:
                not_reported(ax, "no point ran (listed below)")
                continue
            _draw_curves(ax, rows, steps)
            ax.set(xlabel="B (models trained)", ylabel=YLABELS[metric], ylim=(0, None))
            ax.set_xscale("log", base=2)  # B doubles from point to point
            ticks_at(ax, sorted(int(b) for b in points["b"].unique()))
            if metric == "throughput":  # a judged throughput is drawn where the axis is raw samples/s
                curves += _draw_curve_bands(ax, readings, workload, precision)
            if metric == "normalised_throughput":
                ax.axhline(1.0, color="black", linewidth=0.6, zorder=1)
    if speedup[PROCESSES].notna().all(axis=1).any():
        notes.append(COUNTS)
    if len(ranges):
        said = ranges.drop_duplicates("baseline")
        verdicts = "; ".join(f"over {r.baseline}: {r.status}" for r in said.itertuples())
        notes.append(f"{JUDGED}. The verdict on these tables: {verdicts}")
    drawn = [reading.band() for reading in curves]
    apart = [
        r.band(i)
        for r in readings
        if r.range_tested and not _peak(r) and r not in curves
        for i in range(len(r.values))
    ]
    if drawn:
        notes.append(judged_note(CURVE_JUDGED, drawn))
    if apart:
        notes.append(f"judged, {apart_note(apart)}")
    if no_interval:
        notes.append(f"speedups with no interval (a side ran in one process): {', '.join(no_interval)}")
    _legend(fig, points, steps, ranges)
    return finish(fig, title, notes)
