"""plot_hfta: as HFTA's figures, throughput normalised over stock serial fp32 against B, one panel per
workload and precision, one line per mode (colour) and step (line style: stock, graphed, compiled),
the median over repeats with its min-max band over repeats. Points that ran out of memory, failed or were
skipped are listed under the panels; a missing line end is where B stopped fitting."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from ..plotting import failures, finish, not_reported, nothing_ran
from . import MODES, PRECISIONS, STEP_STOCK, WORKLOADS
from .summary import step_order

# What each axis plots. Where a run has no serial fp32 point (e.g. a sweep of one mode) the figure plots
# raw throughput, and its title, not the axis label, says why (the caption, workflow/report/hfta.rst, too).
YLABELS = {
    "normalised_throughput": "throughput / stock serial fp32 at the same B",
    "throughput": "throughput (samples/s)",
}
UNNORMALISED = "raw samples/s: this run has no serial fp32 point to normalise by"


def _panel_names(table: pd.DataFrame) -> pd.Series:
    batch = table["batch_size"].map(lambda b: f", batch {int(b)} per model" if pd.notna(b) else "")
    return table["workload"] + batch


def plot(table: pd.DataFrame) -> Figure:
    """Draw the figure from the tidy table of `gpurepro aggregate hfta`."""
    if table.empty or "workload" not in table:
        raise ValueError("the table has no hfta rows")
    table = table.assign(panel=_panel_names(table), step=table.get("step", STEP_STOCK))  # older tables: stock
    missing = table[(table["metric"] == "throughput") & (table["status"] != "ok")]
    notes = failures(missing, "{workload} {mode} {step} {precision} B={b} run {run}")
    title = f"HFTA training throughput on {table['profile'].iloc[0]}"
    ran = table[(table["status"] == "ok") & table["value"].notna()]
    metric = "normalised_throughput" if (ran["metric"] == "normalised_throughput").any() else "throughput"
    points = ran[ran["metric"] == metric]
    if metric == "throughput":
        title = f"{title} ({UNNORMALISED})"
    if points.empty:
        return nothing_ran(title, notes)
    panels = table.drop_duplicates("workload").set_index("workload")["panel"]
    grid = sns.relplot(
        points, kind="line", x="b", y="value", hue="mode", style="step", markers=True,
        hue_order=[m for m in MODES if m in set(points["mode"])],
        style_order=step_order(points["step"]), estimator="median", errorbar=("pi", 100),
        col="panel", col_order=[panels[w] for w in WORKLOADS if w in panels],
        row="precision", row_order=[p for p in PRECISIONS if p in set(points["precision"])],
        height=3.4, aspect=1.2, facet_kws={"sharey": False},
    )  # fmt: skip
    grid.set_titles(template="{col_name}, {row_name}")
    grid.set_axis_labels("B (models trained)", YLABELS[metric])
    measured_b = sorted(points["b"].unique())
    for ax in grid.axes.flat:
        if not ax.has_data():
            not_reported(ax, "no point ran (listed below)")
        ax.set_ylim(bottom=0)
        # ticks at the B values measured (a quick run's 8 and 32 would otherwise get 9, 12, 15, ...)
        ax.set_xticks(measured_b, [str(int(b)) for b in measured_b])
    if metric == "normalised_throughput":
        grid.refline(y=1.0, color="black", linewidth=0.6, linestyle="-", zorder=1)
    return finish(grid, title, notes)
