"""One look for every study's figures, and the pieces they share.

The theme is seaborn's colour-blind palette on a light grid; every plot maps its groups to markers or
line styles as well as colours, so a figure still reads in greyscale. Plot functions take a tidy table and
return a Figure; `save` is the only place that writes one.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
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
