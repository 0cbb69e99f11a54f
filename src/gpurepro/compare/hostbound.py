"""Which figures the host paces, so which measured between-process spread a one-process row falls back to.

An eager batch-1 inference keeps an H100 busy 10-21% of the time: its latency is how fast the host
queues some hundred kernels, and that varies between processes on one machine far more than within one
(12 fresh processes of one eager DeiT-T point took 4.69 to 7.54 ms; docs/compare.md). So where a side of
a comparison has one process, a host-paced row is read against the host-paced spread the project
measured (config/between_process.yaml), a GPU-bound one against the GPU-bound spread. Host-paced:
- inference: a point whose GPU was busy less than HOST_BOUND_BELOW_PCT of its energy window in both runs
  (a host-bound point; each of its rows says so);
- hfta: a stock step at B <= HFTA_HOST_PACED_B, or serial mode (B models one after another, each a
  small step the host launches), and a speedup over such a baseline;
and everything else GPU-bound. Figures taken at rest (idle and active idle power, clocks) are not paced by
the host at any point: GPU-bound.
"""

from __future__ import annotations

import math

import pandas as pd

from .grade import NOT_A_CHANGE
from .spread import GPU_BOUND, HOST_PACED

# A point whose GPU was busy less than this share of its energy window in both runs is host-bound.
HOST_BOUND_BELOW_PCT = 50.0
UTILISATION = ("gpu_utilization", "energy_window_median")
# Figures taken at rest, by metric, and clocks, by unit: never paced by the host.
AT_REST = ("idle_power", "active_idle_power")
CLOCK_UNITS = ("MHz",)
# HFTA: stock steps of arrays up to this B are host-paced (a fused B=8 step moved 27% between processes).
HFTA_HOST_PACED_B = 8
HFTA_STOCK_STEP, HFTA_SERIAL = "stock", "serial"


def host_bound(a_busy: float, b_busy: float) -> float:
    """The busier run's GPU utilisation where it is below HOST_BOUND_BELOW_PCT (a host-bound point),
    else NaN; a run that did not record it does not count."""
    known = [busy for busy in (a_busy, b_busy) if math.isfinite(busy)]
    busiest = max(known) if known else math.nan
    return busiest if busiest < HOST_BOUND_BELOW_PCT else math.nan


def at_rest(metric: str, unit: str) -> bool:
    return metric in AT_REST or unit in CLOCK_UNITS


def _hfta_side_host_paced(mode: str | None, b: str | None, step: str | None) -> bool:
    """A stock step at small B, or serial mode."""
    if mode == HFTA_SERIAL:
        return True
    try:
        models = float(b or "")
    except ValueError:
        return False
    return (step or HFTA_STOCK_STEP) == HFTA_STOCK_STEP and models <= HFTA_HOST_PACED_B


def _hfta_host_paced(keys: dict[str, str]) -> bool:
    """A point of hfta.csv (columns mode, b and step) that the host paces; a speedup of hfta_speedup.csv
    where either side is (the fused array over a serial baseline moves with the serial rate: columns
    baseline, baseline_b and baseline_step)."""
    if _hfta_side_host_paced(keys.get("mode"), keys.get("b"), keys.get("step")):
        return True
    return "baseline" in keys and _hfta_side_host_paced(
        keys.get("baseline"), keys.get("baseline_b"), keys.get("baseline_step")
    )


def pace(study: str, keys: dict[str, str], metric: str, unit: str, bound: float) -> str:
    """HOST_PACED or GPU_BOUND: which between-process spread a row of this point is read against."""
    if at_rest(metric, unit):
        return GPU_BOUND
    if study == "inference":
        return HOST_PACED if math.isfinite(bound) else GPU_BOUND
    if study == "hfta":
        return HOST_PACED if _hfta_host_paced(keys) else GPU_BOUND
    return GPU_BOUND


def mark(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison with the note "host-bound point (GPU busy N% at most)" in each of the summaries of
    a host-bound point's rows (`host_bound`: its busier run's utilisation, NaN elsewhere)."""
    if table.empty or "host_bound" not in table:
        return table.assign(host_bound=math.nan)
    out = table.copy()
    noted = out["host_bound"].notna()
    out.loc[noted, "summary"] = out.loc[noted, "summary"] + out.loc[noted, "host_bound"].map(
        lambda busy: f"; host-bound point (GPU busy {busy:.0f}% at most)"
    )
    return out


def changes_at_host_bound(table: pd.DataFrame) -> tuple[int, int]:
    """(changes beyond noise at host-bound points, changes beyond noise in all)."""
    changed = table[~table["grade"].isin(NOT_A_CHANGE)]
    at_host_bound = int(changed["host_bound"].notna().sum()) if "host_bound" in table else 0
    return at_host_bound, len(changed)


def tally(table: pd.DataFrame) -> str:
    """How many changes beyond noise lie at host-bound points ('' where none)."""
    at_host_bound, changed = changes_at_host_bound(table)
    if not at_host_bound:
        return ""
    return (
        f"{at_host_bound} of the {changed} changes beyond noise lie at host-bound points (GPU busy under "
        f"{HOST_BOUND_BELOW_PCT:.0f}% of the energy window in both runs): their times are the host's."
    )
