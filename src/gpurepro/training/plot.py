"""plot_ddp: ResNet-50 training images/s against the number of GPUs and the scaling efficiency per GPU
count, each beside its ideal (k times the 1-GPU rate; 100%). A precision compared on one GPU (tf32 beside
AMP) is its own point in the images/s panel, never part of the scaling series. Failed counts are listed
under the figure.

Each measured point has bars: where a claim reads it, the interval the verdict judged it by (at least the
spread between machines it spans), so that the figure draws what was judged; elsewhere, where it ran in
several processes (a `run` column), the 95% interval across them (process_stats.across_processes); from
one process, the IQR of its timed intervals' step times as a rate, which the figure says is within one
process. NVIDIA's published figures
(config/expected/resnet50_training.yaml) are black marks at the GPU counts they name, as the verdict reads
them: judged through the verdict itself (verdict.evaluate), so an images/s figure from another GPU is
scaled to this one by the verdict's own factor, and its bar reaches down to the lowest rate the verdict
accepts; a speedup over one GPU is drawn as its efficiency (speedup / k). A figure the verdict cannot
read here (too few GPUs, no GPU, no rate to scale by) is not drawn, and the note says why.

This project's own figures of the run (`plot: ddp` in config/expected/gpurepro_reference.yaml: a regression
check) are drawn as the verdict judged them, by its own judge (verdict.published.drawn_on): a box behind
the measured point spanning the range the verdict accepted, the point's bars the interval it judged the
value by. A judged claim no panel shows (NVIDIA's AMP over TF32, a ratio of two precisions) is given in a
note with its interval, range and verdict."""

from __future__ import annotations

import math
import textwrap

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
    finish,
    judged_handles,
    judged_note,
    not_reported,
    nothing_ran,
    ticks_at,
    yerr,
)
from ..process_stats import across_processes
from ..tables import pick
from ..verdict.published import Judged, judged_on, study_claims

# Panel: its y label, and how a measured point's value is written beside it.
PANELS = {"throughput": ("images/s (all GPUs, warm-up excluded)", "{:,.0f}"),
          "scaling efficiency": ("% of k x the 1-GPU rate", "{:.0f}%")}  # fmt: skip
SERIES = {"measured": "C0", "ideal": "0.5"}  # the ideal in grey, a reference rather than a result
# Markers and dashes per series: the ideal dashed without markers of its own, a compared precision squares.
MARKERS = {"measured": "o", "ideal": "."}
DASHES = {"measured": "", "ideal": (4, 2)}
CLAIMS = "resnet50_training"  # config/expected/resnet50_training.yaml
# The published metrics drawn, by the panel they are drawn on (a speedup over one GPU as its efficiency).
CLAIM_PANELS = {("throughput", "total"): "throughput", ("speedup_vs_1_gpu", "value"): "scaling efficiency"}
PUBLISHED_MARKERS = ("D", "v", "P", "X")  # one per paper GPU
FIGURE = "ddp"  # the claims that name this figure (`plot: ddp`): NVIDIA's and this project's own
# This project's own figures of a measured point, by the panel whose box they are drawn as.
OWN_PANELS = {("throughput", "total"): "throughput", ("scaling_efficiency", "value"): "scaling efficiency"}
OWN_BOX = 1.12  # a box spans k / OWN_BOX to k x OWN_BOX on the log-2 GPU axis
OWN = (
    "this project's own figures: where one reads a measured point, a box behind it spans the range the "
    "verdict accepted and its bars are the interval the verdict judged it by"
)
WITHIN = (
    "bars: the IQR of its timed intervals' step times, within its one process (no interval across processes)"
)
ACROSS = "bars: the 95% interval across its processes"
MARK_COLUMNS = ["panel", "gpus", "value", "low", "high", "gpu", "scaled", "factor", "precision", "judged_low",
                "judged_high"]  # fmt: skip
JUDGED = "where a claim reads the point, its bars are the interval the verdict judged it by (over machines)"


def scaling_precision(table: pd.DataFrame) -> str:
    """The precision of the scaling series: the one planned at the most GPU counts (a compared precision
    runs on one GPU only); on a tie (one GPU here) the table's first, the profile's own, whose runs the
    workflow hands `gpurepro aggregate ddp` first."""
    return str(table.groupby("precision", sort=False)["gpus"].nunique().idxmax())


def _compared_series(precision: str) -> str:
    return f"{precision} (1 GPU)"


def _point_rates(ok: pd.DataFrame) -> pd.DataFrame:
    """Per (precision, GPU count): images/s (the median over processes) with its bars' ends (ACROSS or
    WITHIN), and the relative half-widths the efficiency's bars are made of."""
    runs = ok["run"] if "run" in ok else pd.Series(1, index=ok.index)
    ok = ok.assign(run=runs.fillna(1))
    rows = []
    for (precision, gpus), point in ok.groupby(["precision", "gpus"], sort=False):
        totals = pick(point, "throughput", "total").groupby("run")["value"].first().dropna()
        if totals.empty:
            continue
        if len(totals) > 1:
            interval = across_processes(totals.to_numpy())
            value, low, high, kind = interval.value, interval.low, interval.high, ACROSS
        else:
            value, kind = float(totals.iloc[0]), WITHIN
            steps = point[point["metric"] == "step_time"].set_index("statistic")["value"]
            low = high = math.nan
            if {"median", "p25", "p75"} <= set(steps.index):  # a rate is inverse to its step time
                low, high = value * steps["median"] / steps["p75"], value * steps["median"] / steps["p25"]
        rows.append({"precision": precision, "gpus": int(gpus), "value": value, "low": low, "high": high,
                     "interval": kind})  # fmt: skip
    return pd.DataFrame(rows, columns=["precision", "gpus", "value", "low", "high", "interval"])


def _panels(rates: pd.DataFrame, precision: str) -> pd.DataFrame:
    """Both panels' points, measured and (where a 1-GPU run exists) ideal, as one long frame with each
    measured point's bars; the other precisions' images/s as series of their own. The efficiency's bars
    take both runs' bars at their widest (the k-GPU run's low over the 1-GPU run's high, and back)."""
    total = rates[rates["precision"] == precision].assign(panel="throughput")
    compared = rates[rates["precision"] != precision].assign(panel="throughput")
    compared = compared.assign(series=compared["precision"].map(_compared_series))
    one = total[total["gpus"] == 1]
    frames = [total.assign(series="measured"), compared]
    if len(one):
        base = one.iloc[0]
        efficiency = total.assign(
            panel="scaling efficiency",
            value=total["value"] / base["value"] / total["gpus"] * 100,
            low=total["low"] / base["high"] / total["gpus"] * 100,
            high=total["high"] / base["low"] / total["gpus"] * 100,
        )
        one_gpu = efficiency["gpus"] == 1  # 100% by definition: the run against itself has no interval
        efficiency.loc[one_gpu, ["low", "high"]] = math.nan
        frames.append(efficiency.assign(series="measured"))
        ideal = pd.concat([total.assign(value=total["gpus"] * base["value"]), efficiency.assign(value=100.0)])
        frames.append(ideal.assign(series="ideal", low=math.nan, high=math.nan))
    return pd.concat(frames, ignore_index=True).dropna(subset=["value"])


def published(table: pd.DataFrame, reference: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """NVIDIA's figures as the verdict reads them on this run (MARK_COLUMNS), and a note per reason the
    verdict could not read some here, naming them. The verdict judges the claims on the ddp table (and
    the reference rates, where a scaling takes a measured rate), on as many GPUs as the table measured;
    an images/s figure is drawn at its published value times the verdict's factor (1 on the paper's
    GPU), its bar down to the lowest rate accepted; a speedup over one GPU as its efficiency."""
    from ..verdict.evaluate import evaluate  # the verdict's judge: needed only for this figure's marks
    from ..verdict.statuses import NOT_COMPARABLE, NOT_MEASURED, NOT_TESTABLE

    claims, hardware = study_claims(CLAIMS)
    tables = {"ddp": table} if reference is None else {"ddp": table, "reference": reference}
    gpu_count = int(pd.to_numeric(table["gpus"], errors="coerce").max())
    rows: list[dict] = []
    unread: dict[str, list[str]] = {}  # the verdict's why -> the figures it keeps off the figure
    for outcome in evaluate(claims, tables, hardware, gpu_count):
        claim = outcome.claim
        panel = CLAIM_PANELS.get((claim.measure.metric, claim.measure.statistic))
        if panel is None or claim.divide_by or claim.subtract or claim.expected.low is None:
            continue  # a ratio of two precisions has no panel here; the verdict reads it
        gpus = int(claim.measure.where["gpus"])
        gpu = hardware[claim.gpus[0]].name
        figure = f"{gpu} at {gpus} GPU{'s' if gpus > 1 else ''}"
        if outcome.through is not None:  # its reading is the nearer GPU's figure, drawn as that one
            why = f"read through {outcome.paper_gpus[0].name}'s figure of the same table"
            unread.setdefault(why, []).append(figure)
            continue
        if outcome.result in (NOT_MEASURED, NOT_TESTABLE, NOT_COMPARABLE):
            figures = unread.setdefault(outcome.detail, [])
            if figure not in figures:  # an 8-GPU rate and its speedup: one figure of the GPU
                figures.append(figure)
            continue
        factor = outcome.factor if outcome.factor is not None else 1.0
        value, low, high = (claim.expected.low * factor, *outcome.accepted)
        if panel == "scaling efficiency":
            value, low, high = (v / gpus * 100 for v in (value, low, high))
        judged_low, judged_high = outcome.intervals[0] if outcome.intervals else (math.nan, math.nan)
        if panel == "scaling efficiency":
            judged_low, judged_high = judged_low / gpus * 100, judged_high / gpus * 100
        rows.append({"panel": panel, "gpus": gpus, "value": value, "low": low, "high": min(high, value),
                     "gpu": gpu, "scaled": outcome.factor is not None, "factor": factor,
                     "precision": claim.measure.where.get("precision"), "judged_low": judged_low,
                     "judged_high": judged_high})  # fmt: skip
    notes = [f"published, not drawn: {', '.join(figures)} ({why})" for why, figures in unread.items()]
    return pd.DataFrame(rows, columns=MARK_COLUMNS), notes


def _judged_bars(frame: pd.DataFrame, marks: pd.DataFrame, precision: str) -> tuple[pd.DataFrame, bool]:
    """The measured points a claim reads, their bars replaced by the interval the verdict judged them by
    (at least the spread between machines it spans), not the run's own; whether any was."""
    frame = frame.copy()
    judged = False
    for mark in marks.dropna(subset=["judged_low", "judged_high"]).itertuples():
        if mark.precision not in (None, precision):
            continue
        at = (frame["series"] == "measured") & (frame["panel"] == mark.panel) & (frame["gpus"] == mark.gpus)
        frame.loc[at, ["low", "high"]] = [mark.judged_low, mark.judged_high]
        judged |= bool(at.any())
    return frame, judged


def own_bands(
    readings: list[Judged], precision: str, frame: pd.DataFrame
) -> tuple[list[tuple[str, int, Band]], list[Band]]:
    """The judged claims of the figure that NVIDIA's marks (published()) do not draw: this project's own
    figures of a measured point of the scaling series, as (panel, GPUs, band), and the bands of those no
    panel shows (a ratio of two precisions, a point not measured on a panel)."""
    nvidia = {claim.id for claim in study_claims(CLAIMS)[0] if not (claim.divide_by or claim.subtract)}
    measured = set(zip(frame.loc[frame["series"] == "measured", "panel"], frame["gpus"], strict=False))
    drawn, apart = [], []
    for reading in readings:
        claim, measure = reading.claim, reading.claim.measure
        if claim.id in nvidia or not reading.range_tested:
            continue  # drawn as NVIDIA's mark (or said why not), or a direction alone
        panel = OWN_PANELS.get((measure.metric, measure.statistic))
        gpus = int(measure.where.get("gpus", 0))
        one = panel and not (claim.divide_by or claim.subtract) and len(reading.values) == 1
        if one and measure.where.get("precision") == precision and (panel, gpus) in measured:
            drawn.append((str(panel), gpus, reading.band()))
        else:
            apart += [reading.band(i) for i in range(len(reading.values))]
    return drawn, apart


def _own_bars(frame: pd.DataFrame, drawn: list[tuple[str, int, Band]]) -> pd.DataFrame:
    """The measured points this project's own claims read, their bars the interval the verdict judged
    them by."""
    frame = frame.copy()
    for panel, gpus, band in drawn:
        at = (frame["series"] == "measured") & (frame["panel"] == panel) & (frame["gpus"] == gpus)
        frame.loc[at, ["low", "high"]] = list(band.interval)
    return frame


def _bars(ax: Axes, points: pd.DataFrame, colour: str) -> None:
    """Each measured point's bars (none where it has none)."""
    points = points.dropna(subset=["low", "high"])
    if len(points):
        bars = yerr(points["value"], points["low"], points["high"])
        ax.errorbar(points["gpus"], points["value"], yerr=bars, fmt="none", ecolor=colour, capsize=4,
                    elinewidth=1.2, zorder=3)  # fmt: skip


def _marks(grid: sns.FacetGrid, marks: pd.DataFrame, counts: list[int]) -> list[str]:
    """The published figures as black marks (a marker per paper GPU) offset right of the measured
    points, their bars down to the lowest value the verdict accepts. Returns the legend's words."""
    labels = []
    for i, (gpu, group) in enumerate(marks.groupby("gpu", sort=False)):
        marker = PUBLISHED_MARKERS[i % len(PUBLISHED_MARKERS)]
        scaled = bool(group["scaled"].any())  # a speedup is a ratio within one run: never scaled
        for panel, rows in group.groupby("panel"):
            rows = rows[rows["gpus"].isin(counts)]
            if rows.empty:
                continue
            ax = grid.axes_dict[panel]
            x = rows["gpus"] * 1.06 ** (i + 1)  # beside the measured point on the log axis
            ax.errorbar(
                x, rows["value"], yerr=yerr(rows["value"], rows["low"], rows["high"]),
                fmt=marker, color="black", markersize=6, capsize=3, elinewidth=1, linestyle="none", zorder=4,
            )  # fmt: skip
        how = (
            f"images/s x {group.loc[group['scaled'], 'factor'].iloc[0]:.3g} to this GPU"
            if scaled
            else "as published"
        )
        label = f"{gpu} published ({how}), bar to the lowest the verdict accepts"
        labels.append((marker, textwrap.fill(label, 40)))
    for marker, label in labels:
        grid.axes.flat[0].plot([], [], marker=marker, color="black", linestyle="none", label=label)
    return [label for _, label in labels]


def plot(table: pd.DataFrame, reference: pd.DataFrame | None = None) -> Figure:
    """Draw the figure from the tidy table of `gpurepro aggregate ddp`; `reference`: the run's reference
    rates (tables/reference.csv), which a scaling against a measured rate of the paper's GPU needs."""
    if table.empty:
        raise ValueError("the ddp table has no rows")
    ok = table[table["status"] == "ok"]
    first = (ok if len(ok) else table).iloc[0]
    on_cpu = first["profile"] == "cpu"
    counts = "processes (gloo)" if on_cpu else "GPUs"
    precision = scaling_precision(table)  # failed runs count: they were planned in the series
    others = [p for p in table["precision"].unique() if p != precision]
    point = "{gpus} " + counts + (" {precision}" if others else "")
    notes = failures(table[table["status"] != "ok"].drop_duplicates("source_file"), point)
    beside = f" ({', '.join(others)} on 1 GPU beside it)" if others else ""
    title = (
        f"{first['model']} training on {first['profile']}: {precision}{beside}, "
        f"batch {first['batch_per_gpu']} per {'process' if on_cpu else 'GPU'}, {first['data']}"
    )
    rates = _point_rates(ok)
    frame = _panels(rates, precision)
    marks, unread = published(table, reference)
    frame, judged = _judged_bars(frame, marks, precision)
    if frame.empty:
        return nothing_ran(title, notes)
    tables = {"ddp": table} if reference is None else {"ddp": table, "reference": reference}
    own, apart = own_bands(judged_on(FIGURE, tables, notes), precision, frame)
    frame = _own_bars(frame, own)
    compared = [_compared_series(p) for p in others]
    palette = {**SERIES, **{series: f"C{i + 1}" for i, series in enumerate(compared)}}
    markers = {**MARKERS, **dict.fromkeys(compared, "s")}
    dashes = {**DASHES, **dict.fromkeys(compared, "")}
    grid = sns.relplot(
        frame, kind="line", x="gpus", y="value", col="panel", col_order=list(PANELS), hue="series",
        style="series", palette=palette, markers=markers, dashes=dashes, height=3.8, aspect=1.2,
        facet_kws={"sharey": False}, legend=False,
    )  # fmt: skip
    grid.set_titles("{col_name}")
    measured = sorted(int(g) for g in frame["gpus"].unique())
    for panel, ax in grid.axes_dict.items():
        ax.set(xlabel=counts, ylabel=PANELS[panel][0], ylim=(0, None))
        if not ax.has_data():
            not_reported(ax, "scaling efficiency: no 1-GPU run to compare with")
            continue
        ax.set_xscale("log", base=2)  # GPU counts double
        ticks_at(ax, measured)
        for series, points in frame[(frame["panel"] == panel) & (frame["series"] != "ideal")].groupby(
            "series"
        ):
            _bars(ax, points, palette[series])
    _label_measured(grid, frame)
    kinds = sorted(set(rates["interval"]))
    notes.append("points: images/s of each run; " + "; ".join(kinds) + (f"; {JUDGED}" if judged else ""))
    notes += unread
    for panel, gpus, band in own:  # drawn once each axis has its log scale
        draw_judged(
            grid.axes_dict[panel], gpus / OWN_BOX, gpus * OWN_BOX, band, SERIES["measured"], bar=False
        )
    if own:
        notes.append(judged_note(OWN, [band for _, _, band in own]))
    if apart:
        notes.append(f"judged, {apart_note(apart)}")
    _marks(grid, marks, measured)
    for ax in grid.axes.flat:  # a third of a doubling either side, however few GPU counts ran: the
        if ax.has_data():  # published marks stay beside their measured point
            ax.set_xlim(min(measured) / 1.26, max(measured) * 1.26)
    for panel, ax in grid.axes_dict.items():  # room for every bar, mark and box, from 0
        drawn = pd.concat([frame[frame["panel"] == panel], marks[marks["panel"] == panel]])
        boxes = [band.accepted[1] for at, _, band in own if at == panel and math.isfinite(band.accepted[1])]
        top = max([drawn[["value", "high"]].max().max(), *boxes])
        if pd.notna(top):
            ax.set_ylim(0, top * 1.08)
    handles, labels = _legend_entries(grid, frame, palette, markers, dashes)
    extra = judged_handles([band for _, _, band in own], "accepted range of this project's own figure")
    handles, labels = handles + extra, labels + [handle.get_label() for handle in extra]
    grid.figure.legend(handles=handles, labels=labels, loc="center left", bbox_to_anchor=(1.0, 0.5),
                       frameon=False)  # fmt: skip
    return finish(grid, title, notes)


def _legend_entries(
    grid: sns.FacetGrid, frame: pd.DataFrame, palette: dict[str, str], markers: dict, dashes: dict
) -> tuple[list, list]:
    """The series (colour, marker and dashes as drawn) and the published marks, in one legend."""
    series = list(dict.fromkeys(frame["series"]))
    handles = [
        Line2D(
            [],
            [],
            color=palette[s],
            marker=markers[s],
            linestyle=(0, dashes[s]) if dashes[s] else "-",
            label=s,
        )
        for s in series
    ]
    ax = grid.axes.flat[0]
    handles += [h for h in ax.get_legend_handles_labels()[0] if isinstance(h, Line2D)]
    return handles, [h.get_label() for h in handles]


def _label_measured(grid: sns.FacetGrid, frame: pd.DataFrame) -> None:
    """Each measured point's value under it, for quoting; the ideal usually runs above."""
    for _, point in frame[frame["series"] != "ideal"].iterrows():
        ax, (_, value) = grid.axes_dict[point["panel"]], PANELS[point["panel"]]
        ax.annotate(value.format(point["value"]), (point["gpus"], point["value"]), xytext=(0, -8),
                    textcoords="offset points", ha="center", va="top", fontsize="small")  # fmt: skip
