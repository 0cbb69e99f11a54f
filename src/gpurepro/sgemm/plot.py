"""plot_sgemm: rate vs N per backend (median, IQR bars), energy per product above idle, each job's trace."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..plotting import figure, finish, iqr_rows, log_where_wide, not_reported, ticks_at, unit
from ..tables import pick

BY_BACKEND = {"x": "n", "y": "value", "hue": "backend", "style": "backend", "markers": True, "dashes": False}


def read_traces(paths: list[Path | str]) -> pd.DataFrame:
    """The jobs' telemetry traces as one table, each sample named by its job."""
    traces = [pd.read_csv(path).assign(job=Path(path).name.split(".")[0]) for path in paths]
    return pd.concat(traces, ignore_index=True) if traces else pd.DataFrame()


def _traces(ax: Axes, traces: pd.DataFrame) -> None:
    """Power where the device reports it; CPU utilisation where it does not (no RAPL)."""
    if traces.empty:
        return not_reported(ax, "telemetry: no trace given")
    power = traces["power_w"].notna().any()
    seconds = traces["time_unix_s"] - traces.groupby("job")["time_unix_s"].transform("min")
    sns.lineplot(traces, x=seconds, y="power_w" if power else "util_pct", hue="job", estimator=None,
                 linewidth=0.8, ax=ax)  # fmt: skip
    ax.set(xlabel="time in job (s)", ylabel="power (W)" if power else "utilisation (%)", title="telemetry")


def plot(table: pd.DataFrame, traces: pd.DataFrame) -> Figure:
    """Draw the figure from the tidy table of `gpurepro aggregate sgemm` and the traces of read_traces."""
    fig, (rate_ax, energy_ax, trace_ax) = figure(3)
    sns.lineplot(iqr_rows(table, "rate"), **BY_BACKEND, estimator="median", errorbar=("pi", 100),
                 err_style="bars", err_kws={"capsize": 3}, ax=rate_ax)  # fmt: skip
    rate_ax.set(xlabel="N", ylabel=f"{unit(table, 'rate')} (median, IQR bars)", title="rate")
    reliable = pick(table, "energy_window_reliable", "value").rename(columns={"value": "reliable"})
    energy = pick(table, "energy_per_op", "above_idle").merge(reliable[["backend", "n", "reliable"]])
    energy = energy[energy["reliable"] > 0].dropna(subset=["value"])  # too short a window is not drawn
    if energy.empty:
        not_reported(energy_ax, "energy per product: not reported by this device (no NVML or RAPL counter)")
    sns.lineplot(energy, **BY_BACKEND, errorbar=None, ax=energy_ax)
    energy_ax.set(xlabel="N", ylabel="J per product, above idle", title="energy per product")
    for ax in (rate_ax, energy_ax):
        log_where_wide(ax)
        ticks_at(ax, sorted(int(n) for n in table["n"].unique()))
    _traces(trace_ax, traces)
    return finish(fig, f"SGEMM FP32 on {table['profile'].iloc[0]}")
