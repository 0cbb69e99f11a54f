"""Points whose GPU sat mostly idle while they were measured: host-bound, so what they time is the host.

An eager batch-1 inference keeps an H100 busy 10-21% of the time: its latency is how fast the host
queues some hundred kernels, and that varies between processes on one machine far more than within one.
On one H100 host, 12 fresh processes timing one eager DeiT-T batch-1 point took 4.69 to 7.54 ms (their
medians; docs/compare.md), a log-normal spread of 0.17, so the ratio of two one-process figures lies
within x/÷ HOST_SPREAD 95% of the time; over five quick runs DeiT-B took 3.5 to 7.5 ms eager while its
CUDA graph stayed at 0.79-0.80 ms. The reps of one run cannot see that spread, so a change there within
it is graded *same within noise*, saying why, for the metrics the host paces (times, rates, energy and
the power drawn while working, the GPU's utilisation); figures taken at rest (idle and active idle
power, clocks) are graded as anywhere else. Changes beyond the spread stand and are counted apart.
"""

from __future__ import annotations

import pandas as pd

from .grade import NOT_COMPARABLE, SAME

# A point whose GPU was busy less than this share of its energy window in both runs is host-bound.
HOST_BOUND_BELOW_PCT = 50.0
UTILISATION = ("gpu_utilization", "energy_window_median")
# The 95% band of the ratio of two one-process figures of a host-bound point (see the module docstring).
HOST_SPREAD = 1.6
# Kinds of metric that the host paces at a host-bound point, and the power metrics taken at rest.
HOST_PACED_KINDS = ("time", "rate", "energy", "power")
AT_REST = ("idle_power", "active_idle_power")
WITHIN_SPREAD = (
    f"host-bound point: within the x{HOST_SPREAD} spread of one process's figures between processes"
)


def _host_paced(table: pd.DataFrame) -> pd.Series:
    """Whether each row's metric moves with the host's speed at a host-bound point."""
    kind = table["kind"].isin(HOST_PACED_KINDS) & ~table["metric"].isin(AT_REST)
    utilisation = (table["metric"] == UTILISATION[0]) & (table["statistic"] == UTILISATION[1])
    return kind | utilisation


def _within_spread(table: pd.DataFrame) -> pd.Series:
    """Rows graded a change that lie at a host-bound point, in a host-paced metric, within HOST_SPREAD."""
    changed = ~table["grade"].isin([SAME, NOT_COMPARABLE])
    inside = (table["ratio"] > 1 / HOST_SPREAD) & (table["ratio"] < HOST_SPREAD)
    return changed & table["host_bound"].notna() & _host_paced(table) & inside


def mark(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison with a `host_bound` column (the point's busier run's utilisation where it is below
    HOST_BOUND_BELOW_PCT, else NaN), the note in each of its rows' summary, and its host-paced changes
    within HOST_SPREAD graded same within noise."""
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
    regraded = _within_spread(out)
    out.loc[regraded, ["grade", "better", "basis"]] = [SAME, "", WITHIN_SPREAD]
    out.loc[regraded, "summary"] = out.loc[regraded, "change_pct"].map(
        lambda change: f"{SAME} ({change:+.1f}%; {WITHIN_SPREAD})"
    )
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


def within_spread(table: pd.DataFrame) -> int:
    """How many rows read same within noise by the host-bound spread alone."""
    return int((table["basis"] == WITHIN_SPREAD).sum()) if "basis" in table else 0


def tally(table: pd.DataFrame) -> str:
    """How many changes lie at host-bound points, and how many host-bound rows read same within noise
    only by the spread between processes ('' where neither)."""
    at_host_bound, changed = changes_at_host_bound(table)
    spread = within_spread(table)
    lines = []
    if spread:
        lines.append(
            f"{spread} rows at host-bound points (GPU busy under {HOST_BOUND_BELOW_PCT:.0f}% of the energy "
            f"window in both runs) moved within x{HOST_SPREAD}, the spread of one process's figures "
            "between processes on one host: same within noise."
        )
    if at_host_bound:
        lines.append(
            f"{at_host_bound} of the {changed} changes beyond noise lie at host-bound points: their times "
            "are the host's."
        )
    return " ".join(lines)
