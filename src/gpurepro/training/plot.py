"""plot_ddp: ResNet-50 training images/s against the number of GPUs and the scaling efficiency per GPU
count, each beside its ideal (k times the 1-GPU rate; 100%). A precision compared on one GPU (tf32 beside
AMP) is its own point in the images/s panel, never part of the scaling series. Failed counts are listed
under the figure."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from ..plotting import failures, finish, not_reported, nothing_ran, ticks_at
from ..tables import pick

# Panel: its y label, and how a measured point's value is written beside it.
PANELS = {"throughput": ("images/s (all GPUs, warm-up excluded)", "{:,.0f}"),
          "scaling efficiency": ("% of k x the 1-GPU rate", "{:.0f}%")}  # fmt: skip
SERIES = {"measured": "C0", "ideal": "0.5"}  # the ideal in grey, a reference rather than a result


def scaling_precision(table: pd.DataFrame) -> str:
    """The precision of the scaling series: the one planned at the most GPU counts (a compared precision
    runs on one GPU only); on a tie (one GPU here) the table's first, the profile's own, whose runs the
    workflow hands `gpurepro aggregate ddp` first."""
    return str(table.groupby("precision", sort=False)["gpus"].nunique().idxmax())


def _compared_series(precision: str) -> str:
    return f"{precision} (1 GPU)"


def _panels(ok: pd.DataFrame, precision: str) -> pd.DataFrame:
    """Both panels' points, measured and (where a 1-GPU run exists) ideal, as one long frame; the other
    precisions' images/s as series of their own."""
    rates = pick(ok, "throughput", "total")[["precision", "gpus", "value"]].assign(panel="throughput")
    total = rates[rates["precision"] == precision]
    compared = rates[rates["precision"] != precision]
    compared = compared.assign(series=compared["precision"].map(_compared_series))
    efficiency = pick(ok[ok["precision"] == precision], "scaling_efficiency", "value")
    efficiency = efficiency[["precision", "gpus", "value"]].assign(panel="scaling efficiency")
    measured = pd.concat([total, efficiency], ignore_index=True).assign(series="measured")
    one = total.loc[total["gpus"] == 1, "value"]
    ideal = (
        pd.concat([total.assign(value=total["gpus"] * one.iloc[0]), efficiency.assign(value=100.0)])
        if len(one)
        else None
    )
    frames = [measured, compared] + ([ideal.assign(series="ideal")] if ideal is not None else [])
    return pd.concat(frames, ignore_index=True).dropna(subset=["value"])


def _label_measured(grid: sns.FacetGrid, frame: pd.DataFrame) -> None:
    """Each measured point's value under it, for quoting; the ideal usually runs above."""
    for _, point in frame[frame["series"] != "ideal"].iterrows():
        ax, (_, value) = grid.axes_dict[point["panel"]], PANELS[point["panel"]]
        ax.annotate(value.format(point["value"]), (point["gpus"], point["value"]), xytext=(0, -8),
                    textcoords="offset points", ha="center", va="top", fontsize="small")  # fmt: skip


def plot(table: pd.DataFrame) -> Figure:
    """Draw the figure from the tidy table of `gpurepro aggregate ddp`."""
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
    frame = _panels(ok, precision)
    if frame.empty:
        return nothing_ran(title, notes)
    palette = {**SERIES, **{_compared_series(p): f"C{i + 1}" for i, p in enumerate(others)}}
    grid = sns.relplot(
        frame, kind="line", x="gpus", y="value", col="panel", col_order=list(PANELS), hue="series",
        style="series", palette=palette, markers=True, height=3.8, aspect=1.2, facet_kws={"sharey": False},
    )  # fmt: skip
    grid.set_titles("{col_name}")
    for panel, ax in grid.axes_dict.items():
        ax.set(xlabel=counts, ylabel=PANELS[panel][0], ylim=(0, None))
        if not ax.has_data():
            not_reported(ax, "scaling efficiency: no 1-GPU run to compare with")
        ticks_at(ax, sorted(int(g) for g in frame["gpus"].unique()))
    _label_measured(grid, frame)
    return finish(grid, title, notes)
