"""plot_deit / plot_bert: the inference claims in one look. One panel per metric the claims read: latency,
power above active idle and energy per inference above active idle, each with the models side by side on
the x axis and the mode (eager, torch.compile, CUDA graph replay) as hue and marker. Each point is the
median over its runs (one independent process each) with the 95% interval across them
(process_stats.across_processes): a rerun moves a host-paced figure far more than its own reps show. From
one run there is no such interval, so the within-process one is drawn where the table has it (power: over
the energy window's sub-windows). The A100's published figures are black marks beside the points they
claim, read from the claims file through the claim loader, so that figure and verdict never disagree; a
published figure is drawn only on a panel of the basis it was measured on: the artifact's power and energy
are above an idle with no CUDA context, these panels above active idle, so those are named in a note
instead of drawn where they would look judged (the verdict reads them off the A100 as informational).
Where the verdict judged a claim of the figure against a range on these tables (on the paper's GPU; off it
the A100's figures are informational or not comparable), the point it read has the range it accepted as a
box behind it and, as its bar, the interval the verdict judged it by, both from the verdict's own judge
(verdict.published.drawn_on); a reading the verdict leaves host-dependent (host-paced) is hatched and says
so. A judged claim no panel shows (a ratio, a difference, a figure of another basis) is given in a note,
with its interval, range and verdict. Where a run measured several precisions or batch sizes (a full
sweep), each (precision, batch size) is one row of panels, the claims' own (fp16, batch 1) first. Failed
points are listed under the figure."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator

from ..errors import GpureproError
from ..plotting import (
    draw_judged,
    failures,
    figure,
    finish,
    judged_handles,
    judged_note,
    not_reported,
    nothing_ran,
    yerr,
)
from ..process_stats import across_processes
from ..verdict.published import Judged, judged_on, study_claims
from .pace import STATISTIC as AT_MEDIAN_PACE
from .summary import MODE_ORDER, MODEL_ORDER, PRECISION_ORDER

FAMILY_TITLES = {"deit": "DeiT (timm)", "bert": "BERT for sequence classification (transformers)"}


@dataclass(frozen=True)
class Panel:
    """One metric of the figure: its rows in the tidy table, and how its axis is labelled."""

    title: str
    metric: str
    statistic: str
    ylabel: str


# The figures the claims read (config/expected/inference.yaml), in the units of `gpurepro aggregate
# inference`. Power and energy are above *active* idle (the GPU awake with its CUDA context, just before
# the energy window), as the verdict reads them, not above the idle drawn before any CUDA context.
PANELS = (
    Panel("latency", "latency", "median", "ms per inference (median of a process's blocks)"),
    # at the point's median pace (pace.py), as the power claims read it: a process's own pace is the host's
    Panel(
        "power above active idle",
        "power_above_active_idle",
        AT_MEDIAN_PACE,
        "W above active idle, at the point's median pace",
    ),
    Panel(
        "energy per inference above active idle",
        "energy_per_inference",
        "above_active_idle",
        "J per inference",
    ),
)
# Which panel a published claim's metric is drawn on: only the panel of its own basis.
CLAIM_PANELS = {
    ("latency", "median"): "latency",
    ("power_above_active_idle", "mean"): "power above active idle",
    ("power_above_active_idle", AT_MEDIAN_PACE): "power above active idle",
    ("energy_per_inference", "above_active_idle"): "energy per inference above active idle",
}
# Published figures of another basis than any panel's: the artifact's power and energy above its idle draw
# (nvidia-smi, no CUDA context). A context at full clocks alone holds about 3 W above that on the A100 and
# about 55 W on an H100, so against power above active idle they would read as held or failed by the
# context's floor, not the model's draw. They are named in a note, not drawn.
OTHER_BASIS = {
    ("power_above_idle", "mean"): "power above idle",
    ("energy_per_inference", "above_idle"): "energy per inference above idle",
}
CLAIMS = "inference"  # config/expected/inference.yaml
# The point the claims are made at, whose row of panels comes first.
CLAIMS_VIEW = ("fp16", 1)
WITHIN = ("ci_low", "ci_high")  # a within-process interval's statistics, where the table has them
# `panel`: the panel a figure is drawn on, empty where none shares its basis (`basis` says which it has)
# `paper`: the paper GPU's hardware entry; `off_paper`: how the verdict reads the figure off that GPU
# ("host-bound", "informational"; "" where it is compared there too)
REFERENCE_COLUMNS = [
    "panel", "basis", "model", "seq_len", "precision", "batch_size", "mode", "value", "unit", "gpu", "claim",
    "paper", "off_paper",
]  # fmt: skip
NO_ENERGY = "power and energy above active idle: not reported by this device (no NVML or RAPL counter)"
# A claim as the verdict judged it on these tables, at the point it read (`panel` "" where no panel shows
# it): the band to draw (plotting.Band: value, judged interval, accepted range, host-dependence, words)
JUDGED_COLUMNS = ["panel", "model", "seq_len", "precision", "batch_size", "mode", "band"]
JUDGED = (
    "where the verdict judged a claim against a range, the point it read has the range it accepted as a "
    "box behind it and the interval it judged the value by as its bar (none where it judged the value "
    "alone)"
)


def _label(model: str, seq_len: float) -> str:
    return f"{model} s{int(seq_len)}" if pd.notna(seq_len) else model


def _model_order(points: pd.DataFrame) -> list[str]:
    """The x axis: models in the study's order (DeiT-T, -S, -B; BERT-B, -L), sequence lengths ascending."""
    rank = {model: i for i, model in enumerate(MODEL_ORDER)}
    models = points.drop_duplicates(["model", "seq_len"]).copy()
    models["rank"] = models["model"].map(lambda m: rank.get(m, len(rank)))
    models = models.sort_values(["rank", "model", "seq_len"])
    return [_label(m, s) for m, s in zip(models["model"], models["seq_len"], strict=True)]


def published(family: str) -> pd.DataFrame:
    """The published figures of one family's absolute claims, one row per claim (REFERENCE_COLUMNS), read
    through the claim loader: the same numbers (e.g. 87 - 61 W, computed) the verdict judges against.
    A figure of another basis than every panel's (OTHER_BASIS) has no panel."""
    claims, hardware = study_claims(CLAIMS)
    rows = []
    for claim in claims:
        where, measure = claim.measure.where, claim.measure
        basis = (measure.metric, measure.statistic)
        panel = CLAIM_PANELS.get(basis)
        if (
            claim.kind != "absolute"
            or (panel is None and basis not in OTHER_BASIS)
            or claim.order
            or claim.divide_by
            or claim.subtract
            or claim.expected.value is None
            or str(where.get("model", "")).split("-")[0] != family
        ):
            continue
        rows.append(
            {
                "panel": panel or "",
                "basis": panel or OTHER_BASIS[basis],
                "model": where["model"],
                "seq_len": where.get("seq_len", math.nan),
                "precision": where.get("precision"),
                "batch_size": where.get("batch_size"),
                "mode": where.get("mode"),
                "value": claim.expected.value,
                "unit": claim.unit,
                "gpu": hardware[claim.gpus[0]].name,
                "claim": claim.id,
                "paper": hardware[claim.gpus[0]],
                "off_paper": claim.off_paper_gpu.reading.replace("_", "-") if claim.off_paper_gpu else "",
            }
        )
    return pd.DataFrame(rows, columns=REFERENCE_COLUMNS)


def judged_points(readings: list[Judged]) -> pd.DataFrame:
    """The verdict's readings of the figure's claims (verdict.published.drawn_on) at the points they read
    (JUDGED_COLUMNS): a reading of one point on a panel's own basis has that panel; a ratio, a difference
    or a figure of another basis has none. A direction judged alone (no range tested) is left out."""
    rows = []
    for reading in readings:
        claim, measure = reading.claim, reading.claim.measure
        if not reading.range_tested or len(reading.values) != 1:
            continue
        one_point = not (claim.divide_by or claim.subtract)
        panel = CLAIM_PANELS.get((measure.metric, measure.statistic), "") if one_point else ""
        keys = {key: measure.where.get(key, math.nan) for key in JUDGED_COLUMNS[1:-1]}
        rows.append({"panel": panel, **keys, "band": reading.band()})
    return pd.DataFrame(rows, columns=JUDGED_COLUMNS)


def _intervals(points: pd.DataFrame) -> pd.DataFrame:
    """One row per (precision, batch size, panel, model, mode): the median over runs and its interval
    across them; from one run, the within-process interval where the table has one (else none)."""
    keys = ["precision", "batch_size", "model", "seq_len", "mode"]
    rows = []
    for panel in PANELS:
        metric = points[points["metric"] == panel.metric]
        for key, group in metric.groupby(keys, dropna=False, sort=False):
            by_statistic = group.set_index(["statistic", "run"])["value"]
            if panel.statistic not in by_statistic.index.get_level_values(0):
                continue
            values = by_statistic[panel.statistic].groupby(level=0).first().dropna()
            if values.empty:
                continue
            interval = across_processes(values.to_numpy())
            low, high, kind = interval.low, interval.high, "across runs"
            if len(values) == 1:
                run, kind, low, high = values.index[0], "within one run", math.nan, math.nan
                if all((statistic, run) in by_statistic.index for statistic in WITHIN):
                    low, high = (float(by_statistic[(statistic, run)]) for statistic in WITHIN)
            point = dict(zip(keys, key, strict=True))
            rows.append(
                {**point, "panel": panel.title, "label": _label(point["model"], point["seq_len"]),
                 "value": interval.value, "low": low, "high": high, "runs": len(values), "interval": kind}
            )  # fmt: skip
    return pd.DataFrame(rows)


def _facets(summary: pd.DataFrame) -> list[tuple[str, int]]:
    """Rows of panels: (precision, batch size), the claims' view first, then the rest of its precision,
    then the other precisions, each by batch size."""
    rank = {p: i for i, p in enumerate(PRECISION_ORDER)}
    facets = {(str(p), int(b)) for p, b in zip(summary["precision"], summary["batch_size"], strict=True)}
    return sorted(
        facets,
        key=lambda f: (f != CLAIMS_VIEW, f[0] != CLAIMS_VIEW[0], rank.get(f[0], len(rank)), f[0], f[1]),
    )


def _draw(
    ax: Axes,
    rows: pd.DataFrame,
    marks: pd.DataFrame,
    bands: pd.DataFrame,
    labels: list[str],
    modes: list[str],
    colours: dict[str, tuple[float, float, float]],
) -> None:
    """Points per model (x) and mode (dodged, hue and marker), error bars where an interval exists, the
    published figures as black bars across their model's group of points, and where the verdict judged
    a point, the range it accepted behind it and the interval it judged it by as its bar."""
    width = 0.7
    step = width / len(modes)
    rows = rows.assign(x=np.nan)
    for _, band in bands.iterrows():  # the point a claim reads: the interval the verdict judged it by
        read = (rows["label"] == band["label"]) & (rows["mode"] == band["mode"])
        rows.loc[read, ["low", "high"]] = list(band["band"].interval)
    for i, mode in enumerate(modes):
        these = rows[rows["mode"] == mode]
        if these.empty:
            continue
        x = np.array([labels.index(label) for label in these["label"]]) - width / 2 + step * (i + 0.5)
        rows.loc[these.index, "x"] = x  # where each point went, for a bar cut at the axis' top
        for _, band in bands[bands["mode"] == mode].iterrows():
            for xi in x[(these["label"] == band["label"]).to_numpy()]:
                draw_judged(ax, xi - step / 2, xi + step / 2, band["band"], colours[mode], bar=False)
        value = these["value"].to_numpy()
        ax.errorbar(
            x, value, yerr=yerr(value, these["low"], these["high"]), fmt=MARKERS[i % len(MARKERS)],
            color=colours[mode], markersize=7, capsize=4, linestyle="none", elinewidth=1.4,
        )  # fmt: skip
    for _, mark in marks.iterrows():
        if mark["label"] not in labels:
            continue
        x = labels.index(mark["label"])
        ax.hlines(mark["value"], x - width / 2, x + width / 2, colors="black", linewidth=2.2, zorder=1.5)
        ax.annotate(
            f"{mark['value']:.3g}", (x + width / 2, mark["value"]), xytext=(3, 0),
            textcoords="offset points", va="center", fontsize=8,
        )  # fmt: skip
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    points = pd.concat([rows["value"], marks["value"]]).dropna()
    if len(points) and points.min() > 0 and points.max() / points.min() >= LOG_SPAN:
        # a CUDA graph's power beside eager batch 1's (about 40x on an H100): on a linear axis the eager
        # points, whose order a claim reads, would lie flat at its foot
        ax.set_yscale("log", nonpositive="clip")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 1, 2, 5, 10, 20, ...: readable
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    else:
        lows = pd.concat([points, rows["low"]]).dropna()
        if len(lows) and lows.min() >= 0:
            ax.set_ylim(bottom=0)
        else:
            ax.axhline(0, color="grey", linewidth=0.6)
    _clip_wide_bars(ax, rows, marks)


def _clip_wide_bars(ax: Axes, rows: pd.DataFrame, marks: pd.DataFrame) -> None:
    """Keep the points readable where an interval runs far above them (two processes a point: t = 12.7):
    the axis ends at CLIP times the highest point or mark, and each bar cut there says where it ends."""
    top = pd.concat([rows["value"], marks["value"]]).max() * CLIP
    if not rows["high"].gt(top).any():
        return
    ax.set_ylim(top=top)
    cut = rows[rows["high"] > top]
    for x, high in zip(cut["x"], cut["high"], strict=True):
        said = f"bar to {high:,.0f}" if high >= 1000 else f"bar to {high:.3g}"
        ax.annotate(said, (x, top), xytext=(3, -3), textcoords="offset points", va="top", fontsize=7,
                    rotation=90)  # fmt: skip


MARKERS = ("o", "s", "D", "^", "v")
CLIP = 3.0  # an axis reaches this many times its highest point; a longer bar is cut there and labelled
LOG_SPAN = 20.0  # a panel whose points span this many times or more is drawn on a log axis
ONE_RUN = (
    "one run per point: no interval across runs; the power's bars are its 95% interval within the run "
    "(a bootstrap over the energy window's sub-windows; one process's median pace is its own), latency "
    "and energy have none"
)


def _where(frame: pd.DataFrame, panel: Panel, precision: str, batch: int) -> pd.DataFrame:
    return frame[
        (frame["panel"] == panel.title) & (frame["precision"] == precision) & (frame["batch_size"] == batch)
    ]


def _references(family: str, notes: list[str]) -> pd.DataFrame:
    """The claims file's published figures, or none (with a note saying why) where it does not load."""
    try:
        return published(family)
    except GpureproError as error:
        notes.append(f"published figures not marked: {error}")
        return pd.DataFrame(columns=REFERENCE_COLUMNS)


def _not_drawn(references: pd.DataFrame) -> str:
    """The note naming the published figures of another basis than the panels', and why they are not
    drawn: the reader finds them, and the verdict's reading of them, without a mark that looks judged."""
    gpus = ", ".join(sorted(set(references["gpu"])))
    bases = " and ".join(dict.fromkeys(references["basis"]))
    figures = ", ".join(f"{r.label} {r.value:.3g} {r.unit}" for r in references.itertuples())
    return (
        f"{gpus} published {bases} not drawn ({figures}): measured above an idle with no CUDA context, "
        "while these panels are above active idle (context up, model warm); a context alone draws about "
        "3 W above that idle on the A100 and about 55 W on an H100, so no panel here shares their basis "
        "(the verdict lists them)"
    )


def _off_paper(marks: pd.DataFrame, table: pd.DataFrame) -> str:
    """Where this run is not on the paper's GPU, how the verdict reads the figures drawn (a mark beside a
    point is no reading of it): an eager batch-1 latency there is the host's, not this GPU's."""
    names = set(table.get("gpu_name", pd.Series(dtype=str)).dropna().astype(str))
    read = marks[marks["off_paper"].astype(bool)]
    read = read[[not any(gpu.matches(name) for name in names) for gpu in read["paper"]]]
    if read.empty:
        return ""
    figures = ", ".join(f"{r.label} {r.value:.3g} {r.unit}" for r in read.itertuples())
    readings = " and ".join(f"as {reading}" for reading in dict.fromkeys(read["off_paper"]))
    gpus = ", ".join(sorted(set(read["gpu"])))
    host = (
        " (eager batch-1 latency is the host's; the CUDA-graph point, where measured, shows the GPU's share)"
        if "host-bound" in readings
        else ""
    )
    return (
        f"{gpus} published {figures} drawn as published: off the {gpus} the verdict reads it {readings}{host}"
    )


def plot(
    table: pd.DataFrame,
    family: str,
    references: pd.DataFrame | None = None,
    processes: pd.DataFrame | None = None,
    judged: pd.DataFrame | None = None,
) -> Figure:
    """Draw one family's figure from the tidy table of `gpurepro aggregate inference`. `references`: the
    published figures to mark (default: published(), the claims file's); `processes`: the family's
    across-process table (tables/inference_<family>_processes.csv), which a difference of two points is
    judged on; `judged`: the claims' readings to draw (JUDGED_COLUMNS; default: judged_points() of the
    verdict's judge on these tables)."""
    table = table[table["family"] == family]
    if table.empty:
        raise ValueError(f"the table has no {family} rows")
    failed = table[table["status"] != "ok"].drop_duplicates("source_file")
    notes = failures(failed, "{model} {precision} {mode} batch {batch_size}")
    title = f"{FAMILY_TITLES.get(family, family)} inference on {table['profile'].iloc[0]}"
    summary = _intervals(table[table["status"] == "ok"])
    if summary.empty:
        return nothing_ran(title, notes)
    references = _references(family, notes) if references is None else references
    references = references.assign(label=list(map(_label, references["model"], references["seq_len"])))
    other_basis = references[references["panel"] == ""]
    references = references[references["panel"] != ""]
    if judged is None:
        tables = {f"inference_{family}": table}
        if processes is not None:
            tables[f"inference_{family}_processes"] = processes
        judged = judged_points(judged_on(family, tables, notes))
    judged = judged.assign(label=list(map(_label, judged["model"], judged["seq_len"])))
    if set(summary["panel"]) == {PANELS[0].title}:
        notes.insert(0, NO_ENERGY)
    labels = _model_order(summary)
    modes = [m for m in MODE_ORDER if m in set(summary["mode"])]
    modes += sorted(set(summary["mode"]) - set(modes))
    colours = dict(zip(modes, sns.color_palette("colorblind", len(modes)), strict=True))
    facets = _facets(summary)
    fig, axes = figure(len(PANELS), len(facets))
    fig.set_size_inches(max(4.6, 0.9 * len(labels) + 1.6) * len(PANELS), 3.9 * len(facets))
    marked, drawn = 0, []
    for ax, ((precision, batch), panel) in zip(axes, [(f, p) for f in facets for p in PANELS], strict=True):
        rows, marks = _where(summary, panel, precision, batch), _where(references, panel, precision, batch)
        bands = _where(judged, panel, precision, batch)
        bands = bands[bands["label"].isin(labels) & bands["mode"].isin(modes)]
        ax.set_title(f"{panel.title}\n{precision}, batch {batch}")
        if rows.empty:  # every claim's panel stays, saying it was not measured
            not_reported(ax, f"{panel.title}: not measured at {precision}, batch {batch}")
            continue
        _draw(ax, rows, marks, bands, labels, modes, colours)
        drawn += list(bands["band"])
        marked += int(marks["label"].isin(labels).sum())
        ax.set(xlabel="model", ylabel=panel.ylabel)
    runs = sorted(int(n) for n in summary["runs"].unique())
    if runs == [1]:
        notes.append(ONE_RUN)
    handles = [
        Line2D([], [], color=colours[m], marker=MARKERS[i % len(MARKERS)], linestyle="none", label=m)
        for i, m in enumerate(modes)
    ]
    gpus = ", ".join(sorted(set(references["gpu"])))
    if marked:
        handles.append(Line2D([], [], color="black", linewidth=2.2, label=f"{gpus} published"))
    elif len(references):
        at = references[["precision", "batch_size"]].drop_duplicates().itertuples(index=False)
        points = "; ".join(sorted(f"{p}, batch {b}" for p, b in at))
        notes.append(f"{gpus} published figures ({points}): no point measured here to mark them by")
    if len(judged):
        apart = list(judged.loc[judged["panel"] == "", "band"])
        notes.append(judged_note(JUDGED, list(judged.loc[judged["panel"] != "", "band"]), apart))
    handles += judged_handles(drawn)
    if len(other_basis):
        notes.append(_not_drawn(other_basis))
    off = _off_paper(references[references["label"].isin(labels)], table) if marked else ""
    if off:
        notes.append(off)
    span = f"{runs[0]}-{runs[-1]}" if len(runs) > 1 else str(runs[0])
    fig.legend(
        handles=handles, title=f"mode (median of {span} process{'es' if runs[-1] > 1 else ''})",
        loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False,
    )  # fmt: skip
    return finish(fig, title, notes)
