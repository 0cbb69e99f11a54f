"""The campaign figure, for a site to read at a glance: each GPU's rate relative to the cluster median as
a distribution (ECDF), per-node strips, rate against power coloured by temperature, and the outliers
labelled by node and GPU, those at a power or thermal cap marked so."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..plotting import figure, finish
from .tables import tukey_fences

SC22_BOUND = 1 / 1.5  # SC22's slowest outlier: 1.5x slower than its cluster's median GPU
MAX_LABELS = 10  # outliers named on a panel, slowest first; the outliers table has all of them
MAX_NODE_TICKS = 40  # node names on the strips' axis; beyond, nodes are numbered in name order


def _cap(gpus: pd.DataFrame) -> pd.Series:
    return (
        pd.Series("none", index=gpus.index)
        .mask(gpus["at_thermal_cap"], "thermal cap")
        .mask(gpus["at_power_cap"], "power cap")
    )


def _label(ax: Axes, gpus: pd.DataFrame, x: str, y: str) -> None:
    """Name the slowest outliers (node/GPU) beside their points."""
    for row in gpus[gpus["outlier"] == "slow"].nsmallest(MAX_LABELS, "relative_rate").itertuples():
        ax.annotate(f"{row.node}/{row.gpu}", (getattr(row, x), getattr(row, y)), fontsize=7,
                    xytext=(4, -3), textcoords="offset points")  # fmt: skip


def _ecdf(ax: Axes, gpus: pd.DataFrame) -> None:
    sns.ecdfplot(gpus, x="relative_rate", ax=ax, color="black")
    low, high = tukey_fences(gpus["relative_rate"].to_numpy())
    ax.axvline(1.0, color="grey", linewidth=0.8)
    for fence in (low, high):
        ax.axvline(fence, color="grey", linestyle=":", linewidth=0.8)
    ax.axvline(SC22_BOUND, color="firebrick", linestyle="--", linewidth=0.8, label="SC22's slowest (1/1.5)")
    ax.set(xlabel="GPU rate / cluster median", ylabel="share of GPUs at or below",
           title="every GPU (dotted: outlier fences)")  # fmt: skip
    ax.legend(loc="upper left")


def _strips(ax: Axes, gpus: pd.DataFrame) -> None:
    nodes = sorted(gpus["node"].unique())
    gpus = gpus.assign(node_order=gpus["node"].map({node: i for i, node in enumerate(nodes)}))
    sns.scatterplot(gpus, x="node_order", y="relative_rate", hue="outlier_label", style="outlier_label",
                    hue_order=["none", "slow", "fast"], style_order=["none", "slow", "fast"],
                    s=18 if len(nodes) <= MAX_NODE_TICKS else 6, ax=ax, linewidth=0)  # fmt: skip
    ax.axhline(1.0, color="grey", linewidth=0.8)
    if len(nodes) <= MAX_NODE_TICKS:
        ax.set_xticks(range(len(nodes)), nodes, rotation=90, fontsize=7)
        xlabel = "node"
    else:
        xlabel = f"node ({len(nodes)}, in name order)"
    _label(ax, gpus, "node_order", "relative_rate")
    ax.set(xlabel=xlabel, ylabel="GPU rate / cluster median", title="the GPUs of each node")
    ax.legend(title="outlier", loc="best")


def _rate_power(ax: Axes, gpus: pd.DataFrame) -> None:
    sns.scatterplot(gpus.rename(columns={"temperature_median": "temperature (C)"}), x="power_median",
                    y="relative_rate", hue="temperature (C)", palette="viridis",
                    style="cap", style_order=["none", "power cap", "thermal cap"], s=28, ax=ax,
                    edgecolor="black", linewidth=0.3)  # fmt: skip
    _label(ax, gpus, "power_median", "relative_rate")
    ax.set(xlabel="median power (W)", ylabel="GPU rate / cluster median",
           title="rate against power, by temperature")  # fmt: skip
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plot(gpus: pd.DataFrame) -> Figure:
    """Draw the figure from one group (profile, backend, N) of the campaign's per-GPU table in wide form
    (tables.wide_gpus)."""
    gpus = gpus.assign(
        cap=_cap(gpus), outlier_label=gpus["outlier"].fillna("").replace("", "none").astype(str)
    )
    fig, (ecdf_ax, strips_ax, power_ax) = figure(3)
    _ecdf(ecdf_ax, gpus)
    _strips(strips_ax, gpus)
    _rate_power(power_ax, gpus)
    first = gpus.iloc[0]
    slow = gpus[gpus["outlier"] == "slow"]
    power, thermal = int(slow["at_power_cap"].sum()), int(slow["at_thermal_cap"].sum())
    notes = [
        f"{len(slow)} slow outlier(s) of {len(gpus)} GPUs on {gpus['node'].nunique()} nodes ({power} at a "
        f"power cap, {thermal} at a thermal cap); the outliers table names every one with its interval"
    ]
    title = f"{first['campaign']}: SGEMM {first['backend']} N={int(first['n'])} on {first['profile']}"
    return finish(fig, title, notes)
