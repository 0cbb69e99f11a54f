"""plot_deit / plot_bert: one row of panels per model (and BERT sequence length): latency per batch size
(median, IQR bars), energy per inference above idle and gross per batch size, and energy against latency.
Marker and line style are the mode, shade the precision; failed points are listed under the figure."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from ..plotting import failures, finish, iqr_rows, log_where_wide, not_reported, nothing_ran, shades, ticks_at
from ..tables import pick
from .summary import MODE_ORDER, MODEL_ORDER, POINT_KEYS, PRECISION_ORDER

FAMILY_TITLES = {"deit": "DeiT (timm)", "bert": "BERT for sequence classification (transformers)"}
# Panel: (x label, y label), in the units of `gpurepro aggregate inference` (ms, J).
PANELS = {
    "latency": ("batch size", "ms per inference (median, IQR)"),
    "energy above idle": ("batch size", "J per inference above idle"),
    "energy gross": ("batch size", "J per inference, gross"),
    "energy vs latency": ("ms per inference (median)", "J per inference above idle"),
}
NO_ENERGY = "energy per inference: not reported by this device (no NVML or RAPL counter)"


def _model(row: pd.Series) -> str:
    return f"{row['model']}, sequence {int(row['seq_len'])}" if pd.notna(row["seq_len"]) else row["model"]


def _by_batch(rows: pd.DataFrame, panel: str) -> pd.DataFrame:
    return rows.assign(panel=panel, x=rows["batch_size"])


def _panels(table: pd.DataFrame) -> pd.DataFrame:
    """One long frame of every panel's points: x, value, the panel, and the point's model label."""
    above = pick(table, "energy_per_inference", "above_idle")
    keys = [k for k in POINT_KEYS if k in table]
    latency = pick(table, "latency")[keys + ["value"]].rename(columns={"value": "x"})
    frame = pd.concat(
        [
            _by_batch(iqr_rows(table, "latency"), "latency"),
            _by_batch(above, "energy above idle"),
            _by_batch(pick(table, "energy_per_inference", "gross"), "energy gross"),
            above.merge(latency, on=keys).assign(panel="energy vs latency"),
        ],
        ignore_index=True,
    ).dropna(subset=["x", "value"])
    frame["label"] = frame.apply(_model, axis=1)
    order = {m: i for i, m in enumerate(MODEL_ORDER)}
    return frame.sort_values(["model", "seq_len"], key=lambda c: c.map(order) if c.name == "model" else c)


def _grid(frame: pd.DataFrame) -> sns.FacetGrid:
    precisions = [p for p in PRECISION_ORDER if p in set(frame["precision"])]
    return sns.relplot(
        frame, kind="line", x="x", y="value", row="label", col="panel",
        col_order=[p for p in PANELS if p in set(frame["panel"])], style="mode",
        style_order=[m for m in MODE_ORDER if m in set(frame["mode"])], hue="precision", hue_order=precisions,
        palette=shades(len(precisions)), markers=True, estimator="median", errorbar=("pi", 100),
        err_style="bars", err_kws={"capsize": 3}, height=2.8, aspect=1.25,
        facet_kws={"sharex": False, "sharey": False},
    )  # fmt: skip


def plot(table: pd.DataFrame, family: str) -> Figure:
    """Draw one family's figure from the tidy table of `gpurepro aggregate inference`."""
    table = table[table["family"] == family]
    if table.empty:
        raise ValueError(f"the table has no {family} rows")
    failed = table[table["status"] != "ok"].drop_duplicates("source_file")
    notes = failures(failed, "{model} {precision} {mode} batch {batch_size}")
    title = f"{FAMILY_TITLES.get(family, family)} inference on {table['profile'].iloc[0]}"
    frame = _panels(table[table["status"] == "ok"])
    if frame.empty:
        return nothing_ran(title, notes)
    if "energy above idle" not in set(frame["panel"]):
        notes.insert(0, NO_ENERGY)
    grid = _grid(frame)
    grid.set_titles(template="{row_name}: {col_name}")
    batches = sorted(int(b) for b in frame["batch_size"].unique())
    for (_, panel), ax in grid.axes_dict.items():
        xlabel, ylabel = PANELS[panel]
        ax.set(xlabel=xlabel, ylabel=ylabel)
        if not ax.has_data():
            not_reported(ax, f"{panel}: not measured")
        log_where_wide(ax)
        if xlabel == "batch size":
            ticks_at(ax, batches)
    return finish(grid, title, notes)
