"""plot_sgemm: SGEMM rate vs N per backend (median, IQR bars), energy per product, and power traces."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..plotting import figure, not_reported, save
from ..tables import pick


def _trace_signal(trace: pd.DataFrame) -> tuple[str, str]:
    """Power where the device reports it; CPU utilisation where it does not (no RAPL)."""
    if trace["power_w"].notna().any():
        return "power_w", "power (W)"
    return "util_pct", "utilisation (%)"


def plot(table: pd.DataFrame, traces: list[Path | str], out: Path | str) -> None:
    profile = table["profile"].iloc[0]
    fig, (rate_ax, energy_ax, trace_ax) = figure(3, f"SGEMM FP32 on {profile}")

    for backend, rows in table.groupby("backend"):
        median = pick(rows, "rate").set_index("n")["value"]
        p25 = pick(rows, "rate", "p25").set_index("n")["value"]
        p75 = pick(rows, "rate", "p75").set_index("n")["value"]
        rate_ax.errorbar(
            median.index, median, yerr=[median - p25, p75 - median], marker="o", capsize=3, label=str(backend)
        )
        energy = pick(rows, "energy_per_op", "above_idle").set_index("n")["value"]
        reliable = pick(rows, "energy_window_reliable", "value").set_index("n")["value"]
        energy = energy[reliable.reindex(energy.index).fillna(0) > 0]  # windows too short are not drawn
        if len(energy):
            energy_ax.plot(energy.index, energy, marker="o", label=f"{backend}, above idle")
    sizes = sorted(table["n"].unique())
    rate_ax.set(xlabel="N", ylabel="TFLOP/s (median, IQR bars)", xscale="log", xticks=sizes)
    rate_ax.set_xticklabels([str(n) for n in sizes])
    rate_ax.legend()
    if energy_ax.lines:
        energy_ax.set(xlabel="N", ylabel="energy per product (J)", xscale="log", yscale="log", xticks=sizes)
        energy_ax.set_xticklabels([str(n) for n in sizes])
        energy_ax.legend()
    else:
        not_reported(energy_ax, "energy (no NVML or RAPL counter)")

    for path in traces:
        trace = pd.read_csv(path)
        column, label = _trace_signal(trace)
        t = trace["time_unix_s"] - trace["time_unix_s"].iloc[0]
        trace_ax.plot(t, trace[column], lw=0.8, label=Path(path).name.split(".")[0])
        trace_ax.set(xlabel="time in job (s)", ylabel=label)
    trace_ax.legend(fontsize="small")
    trace_ax.set_title("telemetry during each job", fontsize="medium")
    save(fig, out)
