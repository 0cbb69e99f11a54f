"""plot_ddp: ResNet-50 training images/s against the number of GPUs, beside the ideal line (k times the
1-GPU rate), and the scaling efficiency per GPU count. Failed counts are listed under the figure."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..plotting import figure, save
from ..tables import pick


def _values(table: pd.DataFrame, metric: str, statistic: str) -> pd.Series:
    rows = pick(table, metric, statistic)
    return rows.set_index("gpus")["value"].sort_index()


def plot(table: pd.DataFrame, out: Path | str) -> None:
    """Draw the figure from the tidy table of `gpurepro aggregate ddp`."""
    if table.empty:
        raise ValueError("the ddp table has no rows")
    ok = table[table["status"] == "ok"]
    failed = table[table["status"] != "ok"].drop_duplicates("source_file")
    first = (ok if len(ok) else table).iloc[0]
    on_cpu = first["profile"] == "cpu"
    unit = "processes (gloo)" if on_cpu else "GPUs"
    title = (
        f"{first['model']} training on {first['profile']}: {first['precision']}, "
        f"batch {first['batch_per_gpu']} per {'process' if on_cpu else 'GPU'}, {first['data']}"
    )
    fig, (rate_ax, efficiency_ax) = figure(2, title)
    total = _values(ok, "throughput", "total")
    if len(total):
        rate_ax.plot(total.index, total.values, marker="o", label="measured")
        if 1 in total.index:
            rate_ax.plot(total.index, total.index * total.loc[1], linestyle="--", color="grey", label="ideal")
        for gpus, value in total.items():
            rate_ax.annotate(f"{value:,.0f}", (gpus, value), textcoords="offset points", xytext=(0, 6),
                             ha="center", fontsize="small")  # fmt: skip
        rate_ax.set_xticks(list(total.index))
        rate_ax.legend(fontsize="small")
    rate_ax.set(xlabel=unit, ylabel="images/s (all GPUs, warm-up excluded)", title="throughput")
    rate_ax.set_ylim(bottom=0)
    efficiency = _values(ok, "scaling_efficiency", "value").dropna()
    if len(efficiency):
        efficiency_ax.bar([str(g) for g in efficiency.index], efficiency.values, color="tab:blue")
        efficiency_ax.axhline(100, linestyle="--", color="grey")
        for i, value in enumerate(efficiency.values):
            efficiency_ax.text(i, value, f"{value:.0f}%", ha="center", va="bottom", fontsize="small")
    else:
        efficiency_ax.text(
            0.5, 0.5, "no 1-GPU run to compare with", ha="center", transform=efficiency_ax.transAxes
        )
    efficiency_ax.set(xlabel=unit, ylabel="scaling efficiency vs 1 (%)", title="speedup / count")
    efficiency_ax.set_ylim(bottom=0)
    if len(failed):
        listing = "; ".join(f"{r['gpus']}: {str(r['reason'])[:70]}" for _, r in failed.iterrows())
        fig.text(0.01, 0.003, f"failed: {listing}", fontsize="x-small", va="bottom")
    save(fig, out)
