"""One look for every study's figures, and the pieces they share.

The theme is seaborn's colour-blind palette on a light grid; every plot maps its groups to markers or
line styles as well as colours, so a figure still reads in greyscale. Plot functions take a tidy table and
return a Figure; `save` is the only place that writes one.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # rules run headless; never try to open a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator  # noqa: E402
from numpy.typing import ArrayLike  # noqa: E402

from .results import write_derived_with  # noqa: E402
from .tables import pick  # noqa: E402

sns.set_theme(
    context="notebook", style="whitegrid", palette="colorblind", font_scale=0.9,
    rc={"legend.fontsize": "small", "legend.title_fontsize": "small"},
)  # fmt: skip
TITLE_PT = 12
NOTE_PT = 8  # footnotes: the failed and skipped points under a figure
MAX_NOTES = 6  # notes under a figure, one per status and reason; the table has every point
MAX_POINTS = 12  # points named in one note
# Statistics of a described metric that span its IQR: with estimator="median" and errorbar=("pi", 100),
# seaborn draws the median and bars from p25 to p75 straight from the tidy rows.
IQR = ["p25", "median", "p75"]


def figure(columns: int, rows: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure of rows x columns panels of different kinds, returned as one flat list of axes."""
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.2 * rows), squeeze=False)
    return fig, list(axes.flat)


def shades(n: int) -> list:
    """n colours from dark to light (viridis short of its pale end), for ordered levels such as
    precisions: they stay apart in greyscale and for colour-blind readers."""
    viridis = sns.color_palette("viridis", as_cmap=True)
    return [viridis(x) for x in np.linspace(0, 0.8, n)]


def iqr_rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The quartile rows of a metric, to be drawn as its median with IQR bars (see IQR)."""
    return table[(table["metric"] == metric) & table["statistic"].isin(IQR)]


def yerr(value: ArrayLike, low: ArrayLike, high: ArrayLike) -> np.ndarray:
    """The [below, above] bar lengths `Axes.errorbar` takes for points with interval ends: 0 where an end
    is missing (a point from one process has no interval), never negative (a median outside a t-interval
    of the geometric mean, or a published figure at the end of its accepted range)."""
    value, low, high = (np.asarray(a, dtype=float) for a in (value, low, high))
    below = np.where(np.isfinite(low), value - low, 0.0)
    above = np.where(np.isfinite(high), high - value, 0.0)
    return np.maximum([below, above], 0.0)


@dataclass(frozen=True)
class Band:
    """A claim's reading as the verdict judged it, to draw beside the point it read: the value, the
    interval the verdict judged it by (at least the spread between machines it spans; NaN ends where it
    has none), the range it accepted as it prints it (an open end infinite), whether its magnitude is
    host-dependent (host-paced: shown, not counted) and whether one workload here is held to the
    range's lower end alone (a range stated across the paper's models)."""

    value: float
    interval: tuple[float, float]
    accepted: tuple[float, float]
    host_dependent: bool = False
    one_sided: bool = False
    claim: str = ""  # the claim's id and the verdict's words, for the note under the figure
    status: str = ""

    def said(self) -> str:
        """'h200-cublas-rate-n8192 51.22 judged by [50.24, 52.23], accepted 48.72 to 53.72: consistent'."""
        low, high = self.interval
        interval = f" judged by [{low:.4g}, {high:.4g}]" if math.isfinite(low) and math.isfinite(high) else ""
        accepted = f"accepted {self.accepted[0]:.4g} to {self.accepted[1]:.4g}"
        return f"{self.claim} {self.value:.4g}{interval}, {accepted}: {self.status}"


@dataclass(frozen=True)
class Marks:
    """A figure's claims as the verdict judged them, placed: each band drawn at a point of the figure, by
    the figure's own key of that point (sgemm: backend and N), the bands no panel shows, and the notes
    of why none could be judged (the claims did not load)."""

    placed: dict[tuple, Band] = field(default_factory=dict)
    apart: list[Band] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


HOST_HATCH = "///"
HOST_WORDS = "host-dependent"
ACCEPTED_LABEL = "accepted range, as the verdict judged it"
HOST_LABEL = "host-dependent: host-paced, its magnitude shown, not counted"
JUDGED_LABEL = "the interval the verdict judged it by"


def draw_judged(ax: Axes, x0: float, x1: float, band: Band, colour: object, bar: bool = True) -> None:
    """The accepted range as a box from x0 to x1 behind the point (a line at a finite end where the
    other is open; the lower end a line too where one workload is held to it), hatched and labelled
    where its magnitude is host-dependent; and, with `bar`, the judged interval as a bar at the box's
    middle (a figure that draws the point with that interval as its own bar passes bar=False). Draw it
    once the x axis has its scale."""
    low, high = band.accepted
    hatch = HOST_HATCH if band.host_dependent else None
    # the box's middle as the eye sees it: on a log axis (B, N) the geometric one
    middle = math.sqrt(x0 * x1) if ax.get_xscale() == "log" else (x0 + x1) / 2
    if math.isfinite(low) and math.isfinite(high):
        ax.fill_between([x0, x1], low, high, color=colour, alpha=0.18, linewidth=0, zorder=1, hatch=hatch)
    for end in (low, high):
        if math.isfinite(end) and (band.one_sided and end == low or not math.isfinite(low + high)):
            ax.hlines(end, x0, x1, color=colour, linewidth=2)
    if band.host_dependent:
        top = high if math.isfinite(high) else max(band.value, band.interval[1])
        ax.annotate(HOST_WORDS, (middle, top), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize=7, fontstyle="italic")  # fmt: skip
    if bar and all(math.isfinite(end) for end in band.interval):
        ax.errorbar([middle], [band.value], yerr=yerr([band.value], *([end] for end in band.interval)),
                    fmt="none", ecolor="black", capsize=5, elinewidth=1.6, zorder=4)  # fmt: skip


def judged_handles(bands: Sequence[Band], accepted: str = ACCEPTED_LABEL, bar: bool = False) -> list:
    """The legend's entries for the bands drawn: the accepted range's box (`accepted` its words), the
    judged interval's bar where drawn apart from the point (`bar`), and the host-dependent hatch."""
    if not bands:
        return []
    handles: list = [Patch(color="0.5", alpha=0.35, label=textwrap.fill(accepted, 30))]
    if bar:
        handles.append(Line2D([], [], color="black", marker="|", markersize=10, linewidth=1.6,
                              label=textwrap.fill(JUDGED_LABEL, 30)))  # fmt: skip
    if any(band.host_dependent for band in bands):
        handles.append(Patch(facecolor="none", edgecolor="0.3", hatch=HOST_HATCH,
                             label=textwrap.fill(HOST_LABEL, 30)))  # fmt: skip
    return handles


def judged_note(lead: str, drawn: Sequence[Band], apart: Sequence[Band] = ()) -> str:
    """The note under a figure that draws claims as the verdict judged them: `lead` (what the boxes and
    bars are), then each reading in the verdict's words, those drawn and those no panel shows."""
    words = [band.said() for band in drawn] + ([apart_note(apart)] if apart else [])
    return f"{lead}. The verdict on these tables: " + "; ".join(words)


def apart_note(apart: Sequence[Band]) -> str:
    """The judged claims a figure's panels do not show (a ratio, a difference, a figure of another basis
    or statistic), in the verdict's words."""
    return "on no panel: " + "; ".join(band.said() for band in apart)


def unit(table: pd.DataFrame, metric: str, statistic: str = "median") -> str:
    """The unit a tidy table gives a metric, for axis labels."""
    units = pick(table, metric, statistic)["unit"].dropna()
    return str(units.iloc[0]) if len(units) else "?"


def not_reported(ax: Axes, what: str) -> None:
    """Say in the panel that the device does not report this, rather than leave it blank."""
    ax.text(0.5, 0.5, textwrap.fill(what, 30), ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def log_where_wide(ax: Axes) -> None:
    """Log axes where the drawn values span more than a factor of 10, so small points stay readable;
    ticked at 1, 2 and 5 per decade in plain numbers."""
    if not ax.has_data():
        return
    (x0, y0), (x1, y1) = ax.dataLim.get_points()
    for axis, low, high, scale in ((ax.xaxis, x0, x1, ax.set_xscale), (ax.yaxis, y0, y1, ax.set_yscale)):
        if low > 0 and high / low > 10:
            scale("log")
            plain_log_ticks(axis)


def plain_log_ticks(axis: Axis) -> None:
    """A log axis ticked at 1, 2 and 5 per decade in plain numbers (2, 5, 10 rather than 10^0.3, ...)."""
    axis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def failures(points: pd.DataFrame, point: str) -> list[str]:
    """One note per status and reason, naming the points that ended so (`point` formatted with a row):
    a sweep where MPS is missing skips dozens of points for one reason, said once."""
    notes = []
    for (status, reason), group in points.groupby(["status", "reason"], sort=False, dropna=False):
        names = [point.format_map(row) for _, row in group.iterrows()]
        more = f" and {len(names) - MAX_POINTS} more" if len(names) > MAX_POINTS else ""
        why = textwrap.shorten(str(reason), 120) if pd.notna(reason) and str(reason) else "no reason recorded"
        notes.append(f"{status} ({why}): {', '.join(names[:MAX_POINTS])}{more}")
    return notes


def ticks_at(ax: Axes, values: list[int]) -> None:
    """x ticks at the values measured (sizes, batch sizes, GPU counts), also on a log axis."""
    ax.set_xticks(values, [str(v) for v in values])
    ax.xaxis.set_minor_locator(NullLocator())


def nothing_ran(title: str, notes: list[str]) -> Figure:
    """The figure of a study none of whose points ran: the title and the notes saying why."""
    fig, (ax,) = figure(1)
    not_reported(ax, "no point ran (listed below)")
    return finish(fig, title, notes)


def finish(plot: Figure | sns.FacetGrid, title: str, notes: Sequence[str] = ()) -> Figure:
    """Title the figure, lay it out and put its notes (failed points, what was not measured) under it."""
    fig = plot.figure if isinstance(plot, sns.FacetGrid) else plot
    width = fig.get_size_inches()[0]
    fig.suptitle(textwrap.fill(title, int(width * 72 / (0.6 * TITLE_PT))), fontsize=TITLE_PT)
    sns.despine(fig)
    plot.tight_layout()  # a FacetGrid's own keeps room for its legend beside the panels
    if notes:
        _footnote(fig, notes)
    return fig


def _footnote(fig: Figure, notes: Sequence[str]) -> None:
    """The notes wrapped to the figure's width, in room the figure grows at its bottom, so that neither
    the panels nor the notes are cut or squeezed however many there are."""
    if len(notes) > MAX_NOTES:
        notes = [*notes[:MAX_NOTES], f"(+{len(notes) - MAX_NOTES} more in the table)"]
    width, height = fig.get_size_inches()
    chars = int(width * 72 / (0.6 * NOTE_PT))  # a conservative average glyph width
    text = "\n".join(textwrap.fill(note, chars, subsequent_indent="    ") for note in notes)
    grow = (text.count("\n") + 2) * 1.3 * NOTE_PT / 72
    fig.set_size_inches(width, height + grow)
    for ax in fig.axes:  # every panel keeps its size and its place under the title
        x0, y0, w, h = ax.get_position().bounds
        ax.set_position([x0, (y0 * height + grow) / (height + grow), w, h * height / (height + grow)])
    fig.text(0.01, 0.5 * NOTE_PT / 72 / (height + grow), text, fontsize=NOTE_PT, va="bottom")


def save(fig: Figure, path: Path | str) -> None:
    """Write the PNG; the tight bounding box keeps a legend placed beside the panels inside the image."""
    try:
        write_derived_with(path, lambda tmp: fig.savefig(tmp, dpi=120, bbox_inches="tight"))
    finally:
        plt.close(fig)
