"""The comparison's figure: each metric's ratio B/A with its 95% interval across processes (or from the
measured between-process spread, with one process a side), a facet per study. The band drawn around 1 is
the equivalence margin of times and rates (margins.py): a bar wholly inside it reads the same within
noise, a bar off 1 a change, any other bar unresolved at this spread."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from ..plotting import figure, finish, not_reported
from .grade import FASTER, HIGHER, KINDS, LOWER, NEUTRAL, SAME, SLOWER, UNRESOLVED
from .margins import MARGINS

# Only metrics with a better side are drawn (time, rate, energy): clocks, counts and power are in the
# table; drawing hundreds of bookkeeping ratios would hide the ones a reader came for.
# One colour per grade in every figure, whichever grades it holds.
GRADES = [SAME, UNRESOLVED, FASTER, SLOWER, HIGHER, LOWER]
DRAWN_KINDS = [kind for kind, direction in KINDS.items() if direction != NEUTRAL]


def drawn(table: pd.DataFrame) -> pd.DataFrame:
    """The rows the figure shows: a ratio of a time, rate or energy metric."""
    rows = table[table["kind"].isin(DRAWN_KINDS) & np.isfinite(table["ratio"].astype(float))].copy()
    rows["label"] = rows["metric"] + np.where(
        rows["statistic"].eq("median"), "", " (" + rows["statistic"] + ")"
    )
    return rows


def plot(table: pd.DataFrame, title: str) -> Figure:
    rows = drawn(table)
    if rows.empty:
        fig, (ax,) = figure(1)
        not_reported(ax, "no time, rate or energy metric has a ratio in both runs")
        return finish(fig, title)
    grid = sns.catplot(
        rows, x="ratio", y="label", hue="grade", hue_order=[g for g in GRADES if g in set(rows["grade"])],
        palette=dict(zip(GRADES, sns.color_palette("colorblind", len(GRADES)), strict=True)),
        col="study", col_wrap=min(3, rows["study"].nunique()),
        kind="strip", sharey=False, height=3.2 + 0.18 * rows.groupby("study")["label"].nunique().max(),
        aspect=1.3, jitter=False, marker="o",
    )  # fmt: skip
    margin = MARGINS["time"].width
    energy = MARGINS["energy"].width
    for study, ax in grid.axes_dict.items():
        ax.axvspan(1 - margin, 1 + margin, color="0.85", zorder=0, label=f"margin (±{margin:.0%})")
        ax.axvline(1, color="0.4", lw=0.8)
        mine = rows[(rows["study"] == study) & rows["ci_low"].notna()]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        for row in mine.itertuples():
            if row.label in labels:
                y = labels.index(row.label)
                ax.plot([row.ci_low, row.ci_high], [y, y], color="0.2", lw=1)
        ax.set(xlabel="B / A", ylabel="")
    notes = [
        "Bars: 95% intervals across processes (Welch), or from the measured between-process spread "
        "where a side has one process; they judge their ratios. "
        f"Band: the equivalence margin of times and rates, ±{margin:.0%} (energy ±{energy:.0%}): a bar "
        "inside it is the same within noise, one that crosses 1 and leaves it unresolved. "
        "Time: >1 is slower; rate: >1 is faster."
    ]
    return finish(grid, title, notes)
