"""plot_hfta: as HFTA's figures, throughput normalised over serial fp32 against B, one panel per workload,
one line per mode and precision (median over repeats) with its min-max band over repeats. Points that
ran out of memory, failed or were skipped are listed under the panels; a missing line end is where B
stopped fitting."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.ticker import MaxNLocator

from ..plotting import figure, save
from . import MODES, PRECISIONS, WORKLOADS

COLOURS = {"serial": "tab:grey", "concurrent": "tab:blue", "mps": "tab:green", "hfta": "tab:red"}
LINESTYLES = {"fp32": "-", "fp16": "--", "bf16": ":"}
MARKERS = {"serial": "o", "concurrent": "s", "mps": "^", "hfta": "D"}


def _panel(ax, rows: pd.DataFrame, metric: str) -> None:
    points = rows[(rows["metric"] == metric) & (rows["status"] == "ok")].dropna(subset=["value"])
    for mode in [m for m in MODES if m in set(points["mode"])]:
        for precision in [p for p in PRECISIONS if p in set(points["precision"])]:
            line = points[(points["mode"] == mode) & (points["precision"] == precision)]
            if line.empty:
                continue
            stats = line.groupby("b")["value"].agg(["median", "min", "max"]).sort_index()
            ax.plot(
                stats.index, stats["median"], color=COLOURS[mode], linestyle=LINESTYLES.get(precision, "-"),
                marker=MARKERS[mode], label=f"{mode} {precision}",
            )  # fmt: skip
            ax.fill_between(
                stats.index, stats["min"], stats["max"], color=COLOURS[mode], alpha=0.15, linewidth=0
            )
    if metric == "normalised_throughput":
        ax.axhline(1.0, color="black", linewidth=0.5)
        ax.set_ylabel("throughput / serial fp32 at the same B")
    else:
        ax.set_ylabel("samples/s (no serial fp32 point to normalise by)")
    ax.set_xlabel("B (models trained)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")


def plot(table: pd.DataFrame, out: Path | str) -> None:
    """Draw the figure from the tidy table of `gpurepro aggregate hfta`."""
    if table.empty or "workload" not in table:
        raise ValueError("the table has no hfta rows")
    workloads = [w for w in WORKLOADS if w in set(table["workload"])]
    profile = str(table["profile"].iloc[0])
    fig, axes = figure(len(workloads), f"HFTA training throughput on {profile}")
    for ax, workload in zip(axes, workloads, strict=True):
        rows = table[table["workload"] == workload]
        normalised = rows[(rows["metric"] == "normalised_throughput") & rows["value"].notna()]
        if not (rows[rows["metric"] == "throughput"]["value"].notna()).any():
            ax.text(0.5, 0.5, f"{workload}: no point ran\n(listed below)", ha="center", va="center",
                    transform=ax.transAxes)  # fmt: skip
            ax.set_axis_off()
            continue
        _panel(ax, rows, "normalised_throughput" if len(normalised) else "throughput")
        batch = rows["batch_size"].dropna()
        ax.set_title(f"{workload}, batch {int(batch.iloc[0])} per model" if len(batch) else workload)
    missing = table[(table["metric"] == "throughput") & (table["status"] != "ok")]
    if len(missing):
        listing = "; ".join(
            f"{r['workload']} {r['mode']} {r['precision']} B={r['b']} run {r['run']}: {r['status']} "
            f"({str(r['reason'])[:50]})"
            for _, r in missing.head(6).iterrows()
        )
        more = f" (+{len(missing) - 6} more)" if len(missing) > 6 else ""
        fig.text(0.01, 0.003, f"not measured: {listing}{more}", fontsize="x-small", va="bottom")
    save(fig, out)
