"""Points whose GPU sat mostly idle while they were measured: host-bound, so what they time is the host.

An eager batch-1 inference keeps an H100 busy 12-21% of the time: its latency is how fast the host queues
some hundred kernels, and that varies between processes on one machine by up to 2x (docs/compare.md:
DeiT-B 3.5 to 7.5 ms over five runs, while its CUDA graph stayed at 0.79-0.80 ms). A change there says
little about the GPU or the software under test, so such rows are marked, not hidden: their grade stands,
and the report says how many of the changes lie at host-bound points.
"""

from __future__ import annotations

import pandas as pd

from .grade import NOT_COMPARABLE, SAME

# A point whose GPU was busy less than this share of its energy window in both runs is host-bound.
HOST_BOUND_BELOW_PCT = 50.0
UTILISATION = ("gpu_utilization", "energy_window_median")


def mark(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison with a `host_bound` column (the point's busier run's utilisation where it is below
    HOST_BOUND_BELOW_PCT, else NaN) and the note in each of its rows' summary."""
    metric, statistic = UTILISATION
    if table.empty or "metric" not in table:
        return table.assign(host_bound=float("nan"))
    utilisation = table[(table["metric"] == metric) & (table["statistic"] == statistic)]
    busiest = utilisation[["a_value", "b_value"]].max(axis=1)
    bound = busiest[busiest < HOST_BOUND_BELOW_PCT]
    at = utilisation.loc[bound.index]
    per_point = dict(zip(zip(at["table"], at["point"], strict=True), bound, strict=True))
    points = zip(table["table"], table["point"], strict=True)
    host_bound = [per_point.get(point, float("nan")) for point in points]
    out = table.assign(host_bound=host_bound)
    noted = out["host_bound"].notna()
    out.loc[noted, "summary"] = out.loc[noted, "summary"] + out.loc[noted, "host_bound"].map(
        lambda busy: f"; host-bound point (GPU busy {busy:.0f}% at most)"
    )
    return out


def changes_at_host_bound(table: pd.DataFrame) -> tuple[int, int]:
    """(changes beyond noise at host-bound points, changes beyond noise in all)."""
    changed = table[~table["grade"].isin([SAME, NOT_COMPARABLE])]
    at_host_bound = int(changed["host_bound"].notna().sum()) if "host_bound" in table else 0
    return at_host_bound, len(changed)


def tally(table: pd.DataFrame) -> str:
    """'55 of the 72 changes beyond noise lie at host-bound points' ('' where none does)."""
    at_host_bound, changed = changes_at_host_bound(table)
    if not at_host_bound:
        return ""
    return (
        f"{at_host_bound} of the {changed} changes beyond noise lie at host-bound points (GPU busy "
        f"under {HOST_BOUND_BELOW_PCT:.0f}% of the energy window in both runs): their times are the host's."
    )
