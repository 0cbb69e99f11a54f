"""plot_deit / plot_bert: per precision (one row each), latency per model (and sequence length) and mode
with IQR bars, energy per inference above idle, and energy against latency for every point.

The first two panels show the smallest batch size (batch 1 in every profile: the original's setting);
the third shows every batch size, marker size growing with the batch.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..plotting import figure, not_reported, save
from ..tables import pick
from .summary import MODE_ORDER, PRECISION_ORDER

MARKERS = {"eager": "o", "compile": "s", "cudagraph": "^"}
FAMILY_TITLES = {"deit": "DeiT (timm)", "bert": "BERT for sequence classification (transformers)"}


def _scale(ax, values: pd.Series, axis: str = "y") -> None:
    """Log scale where the values span more than a factor of 10, linear (from 0) otherwise."""
    clean = values.dropna()
    clean = clean[clean > 0]
    if len(clean) and clean.max() / clean.min() > 10:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    elif axis == "y":
        ax.set_ylim(bottom=0)


def _category(row: pd.Series) -> str:
    if pd.notna(row.get("seq_len")):
        return f"{row['model']}\ns{int(row['seq_len'])}"
    return str(row["model"])


def _by_point(table: pd.DataFrame, metric: str, statistic: str) -> pd.DataFrame:
    rows = pick(table, metric, statistic).copy()
    rows["category"] = rows.apply(_category, axis=1)
    return rows


def _latency_panel(ax, rows: pd.DataFrame, categories: list[str], batch: int) -> None:
    modes = [m for m in MODE_ORDER if m in set(rows["mode"])]
    width = 0.6 / max(len(modes), 1)
    for i, mode in enumerate(modes):
        mine = rows[rows["mode"] == mode]
        median = _by_point(mine, "latency", "median").groupby("category")["value"].median()
        p25 = _by_point(mine, "latency", "p25").groupby("category")["value"].median()
        p75 = _by_point(mine, "latency", "p75").groupby("category")["value"].median()
        x = [categories.index(c) + (i - (len(modes) - 1) / 2) * width for c in median.index]
        ax.errorbar(
            x, median, yerr=[median - p25.reindex(median.index), p75.reindex(median.index) - median],
            marker=MARKERS.get(mode, "o"), linestyle="none", capsize=3, label=mode,
        )  # fmt: skip
    ax.set(ylabel=f"ms per inference, batch {batch} (median, IQR)")
    _scale(ax, pick(rows, "latency", "p75")["value"])
    ax.set_xticks(range(len(categories)), categories, fontsize="small")
    ax.set_xlim(-0.5, len(categories) - 0.5)
    ax.legend(fontsize="small")


def _energy_panel(ax, rows: pd.DataFrame, categories: list[str], batch: int) -> bool:
    modes = [m for m in MODE_ORDER if m in set(rows["mode"])]
    width = 0.6 / max(len(modes), 1)
    drawn = False
    for i, mode in enumerate(modes):
        mine = rows[rows["mode"] == mode]
        above = _by_point(mine, "energy_per_inference", "above_idle").groupby("category")["value"].median()
        gross = _by_point(mine, "energy_per_inference", "gross").groupby("category")["value"].median()
        above, gross = above.dropna(), gross.dropna()
        if above.empty:
            continue
        drawn = True
        x = [categories.index(c) + (i - (len(modes) - 1) / 2) * width for c in above.index]
        ax.bar(x, above, width=width, label=f"{mode}, above idle")
        gx = [categories.index(c) + (i - (len(modes) - 1) / 2) * width for c in gross.index]
        ax.scatter(gx, gross, marker="_", s=200, color="black", zorder=3, label="gross" if i == 0 else None)
    if drawn:
        ax.set(ylabel=f"J per inference, batch {batch}")
        _scale(ax, pick(rows, "energy_per_inference", "gross")["value"])
        ax.set_xticks(range(len(categories)), categories, fontsize="small")
        ax.set_xlim(-0.5, len(categories) - 0.5)
        ax.legend(fontsize="small")
    return drawn


def _scatter_panel(ax, rows: pd.DataFrame) -> bool:
    latency = _by_point(rows, "latency", "median")
    energy = _by_point(rows, "energy_per_inference", "above_idle")
    keys = ["category", "batch_size", "mode", "run"]
    points = latency.merge(energy, on=keys, suffixes=("_ms", "_j")).dropna(subset=["value_j"])
    if points.empty:
        return False
    for category, group in points.groupby("category", sort=False):
        colour = None
        for mode, mine in group.groupby("mode"):
            drawn = ax.scatter(
                mine["value_ms"], mine["value_j"], s=12 + 6 * mine["batch_size"].astype(float),
                marker=MARKERS.get(str(mode), "o"), color=colour,
                label=category.replace("\n", " ") if colour is None else None, alpha=0.8,
            )  # fmt: skip
            colour = drawn.get_facecolor()[0]
    ax.set(xlabel="ms per inference (median)", ylabel="J per inference above idle")
    _scale(ax, points["value_ms"], "x")
    _scale(ax, points["value_j"], "y")
    ax.legend(
        fontsize="x-small", title="o eager, s compile, ^ cudagraph; size: batch", title_fontsize="x-small"
    )
    return True


def plot(table: pd.DataFrame, family: str, out: Path | str) -> None:
    """Draw one family's figure from the tidy table of `gpurepro aggregate inference`."""
    table = table[table["family"] == family]
    if table.empty:
        raise ValueError(f"the table has no {family} rows")
    failed = table[table["status"] != "ok"].drop_duplicates("source_file")
    table = table[table["status"] == "ok"]
    precisions = [p for p in PRECISION_ORDER if p in set(table["precision"])] or ["none"]
    profile = str((table if len(table) else failed)["profile"].iloc[0])
    fig, axes = figure(3, f"{FAMILY_TITLES.get(family, family)} inference on {profile}", rows=len(precisions))
    for row, precision in enumerate(precisions):
        latency_ax, energy_ax, scatter_ax = axes[3 * row : 3 * row + 3]
        rows = table[table["precision"] == precision]
        if rows.empty:
            for ax in (latency_ax, energy_ax, scatter_ax):
                not_reported(ax, "no successful point")
            continue
        batch = int(rows["batch_size"].min())
        smallest = rows[rows["batch_size"] == batch]
        categories = list(dict.fromkeys(_by_point(smallest, "latency", "median")["category"]))
        _latency_panel(latency_ax, smallest, categories, batch)
        latency_ax.set_title(f"{precision}: latency", fontsize="medium")
        if _energy_panel(energy_ax, smallest, categories, batch):
            energy_ax.set_title(f"{precision}: energy per inference", fontsize="medium")
        else:
            not_reported(energy_ax, "energy (no NVML or RAPL counter)")
        if _scatter_panel(scatter_ax, rows):
            scatter_ax.set_title(f"{precision}: energy vs latency, every batch size", fontsize="medium")
        else:
            not_reported(scatter_ax, "energy (no NVML or RAPL counter)")
    if len(failed):
        listing = "; ".join(
            f"{r['model']} {r['precision']} {r['mode']} b{r['batch_size']}: {r['reason'][:60]}"
            for _, r in failed.head(6).iterrows()
        )
        more = f" (+{len(failed) - 6} more)" if len(failed) > 6 else ""
        fig.text(0.01, 0.003, f"failed points: {listing}{more}", fontsize="x-small", va="bottom")
    save(fig, out)
