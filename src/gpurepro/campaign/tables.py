"""A campaign's tables: each GPU's medians with intervals, each node's spread and state, the cluster's
variation, its outliers and what goes with the rate.

Per GPU (`gpus`): the median of rate, time, power, SM clock, temperature and energy per product over
its reps of all runs, each with its distribution-free 95% interval (intervals.py); its rate relative to
the cluster median with an interval; how many of its reps ran at a power or a thermal cap.

Across the cluster (`summary`), per profile, backend and N:
- the variation, four ways. `sc22_pct`, as we read Sinha et al. (SC22, arXiv:2208.11035 v3): the range
  of the per-GPU median rates between the box plot's whiskers (Tukey's fences, 1.5 IQR beyond the
  quartiles: the outliers left out, being reported apart), over the median GPU's rate, in percent.
  `spread_pct`, this project's node spread (the seed's: slowest over fastest GPU, (max - min) / min)
  applied to the whole cluster, which its slowest outlier sets; `cv_pct`; `iqr_pct` (IQR over median).
  Each but `spread_pct` (set by the two extreme GPUs, which no resample can pass) with a 95% interval
  over the GPUs (a seeded bootstrap that redraws which GPUs the cluster has: how well this many GPUs
  pin the figure down);
- the cluster median rate, with the interval its GPUs' own intervals give it (the median is monotone in
  each GPU's median, so the median of their lower ends bounds it from below, of the upper from above);
- outliers: GPUs whose median rate lies beyond a Tukey fence; `resolved` where the GPU's interval
  relative to the cluster median excludes 1 as well; at a power or thermal cap where most of its reps
  were (NVML's clock-event reasons);
- the share of the variance of log rates between nodes and within them (one-way ANOVA sums of squares),
  with the F test's p-value: a cluster whose slow cards come in whole nodes points at cooling or power
  delivery, one whose slow cards are scattered points at the cards (nodes.py);
- each node's spread (the seed's node spread): its median over nodes with an interval over resampled
  nodes, its maximum, and whether the nodes' GPUs differ beyond their reps' noise (nodes.py);
- Spearman's rank correlation of rate with power, SM clock and temperature across GPUs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..tables import single
from . import nodes
from .intervals import group_median_intervals, over_units, spearman_interval

GROUP = ["profile", "backend", "n"]
GPU = ["node", "device"]
IDENTITY = ["gpu_name", "gpu_uuid", "gpu_serial", "gpu_pci_bus_id", "gpu_vbios", "power_limit_w",
            "driver_version"]  # fmt: skip
# (reps column, metric, unit); rate first: what the cluster is ranked by.
METRICS = [("tflops", "rate", "TFLOP/s"), ("ms", "time", "ms"), ("power_w_median", "power", "W"),
           ("sm_clock_mhz_median", "sm_clock", "MHz"), ("temperature_c_median", "temperature", "C"),
           ("energy_per_rep_j", "energy_per_rep", "J")]  # fmt: skip
RUN_LEVEL = {"energy_per_rep_j"}  # one energy window per run: one value per run, not per rep
POWER_CAP = {"sw_power_cap", "hw_power_brake_slowdown"}
THERMAL_CAP = {"sw_thermal_slowdown", "hw_thermal_slowdown"}
TUKEY = 1.5
# Figures set by the cluster's extreme GPUs: no resample of GPUs can reach past them, so their bootstrap
# interval would be one-sided by construction; they are given without one.
EXTREMES = {"spread_pct"}
CORRELATED = [("power", "W"), ("sm_clock", "MHz"), ("temperature", "C")]


def _reasons_in(names: pd.Series, reasons: set[str]) -> np.ndarray:
    """Whether each rep's clock-event reasons (names joined by '|') include any of `reasons`."""
    pattern = "|".join(sorted(reasons))
    found = names.astype("string").fillna("").str.contains(rf"(?:^|\|)(?:{pattern})(?:$|\|)", regex=True)
    return found.to_numpy(dtype=bool)


def per_gpu(reps: pd.DataFrame) -> pd.DataFrame:
    """One row per GPU of a group (profile, backend, N): identity, the median and interval of each
    metric (`<metric>_median`, `_ci_low`, `_ci_high`), rep counts, and its rate against the cluster's."""
    codes, keys = pd.factorize(pd.MultiIndex.from_frame(reps[GPU].astype(str)), sort=True)
    first = reps.groupby(codes, sort=True).first()
    out = pd.DataFrame({"node": first["node"].to_numpy(), "gpu": first["device"].astype(str).to_numpy()})
    for column in IDENTITY + ["start_time"]:
        out[column] = first[column].to_numpy() if column in first else None
    for column, metric, _unit in METRICS:
        values, groups = reps[column].to_numpy(float), codes
        if column in RUN_LEVEL:
            once = ~pd.DataFrame({"g": codes, "f": reps["source_file"]}).duplicated().to_numpy()
            values, groups = values[once], codes[once]
        found = group_median_intervals(values, groups).reindex(range(len(keys)))
        for statistic in ("median", "ci_low", "ci_high"):
            out[f"{metric}_{statistic}"] = found[statistic].to_numpy()
    out["reps"] = np.bincount(codes, minlength=len(keys))
    names = reps["clock_event_names"]
    for flag, mask in (("throttled", reps["throttled"].astype(bool).to_numpy()),
                       ("power_cap", _reasons_in(names, POWER_CAP)),
                       ("thermal_cap", _reasons_in(names, THERMAL_CAP))):  # fmt: skip
        out[f"{flag}_reps"] = np.bincount(codes, weights=mask, minlength=len(keys)).astype(int)
    out["at_power_cap"] = out["power_cap_reps"] > out["reps"] / 2
    out["at_thermal_cap"] = out["thermal_cap_reps"] > out["reps"] / 2
    return _relative(out)


def _relative(gpus: pd.DataFrame) -> pd.DataFrame:
    """Each GPU's rate over the cluster median, and the outliers. The interval divides the GPU's ends by
    the far ends of the cluster median's (bounds of bounds), so it covers at least as well as they do."""
    median = float(gpus["rate_median"].median())
    low, high = float(gpus["rate_ci_low"].median()), float(gpus["rate_ci_high"].median())
    gpus["relative_rate"] = gpus["rate_median"] / median
    gpus["relative_ci_low"] = gpus["rate_ci_low"] / high
    gpus["relative_ci_high"] = gpus["rate_ci_high"] / low
    fence_low, fence_high = tukey_fences(gpus["relative_rate"].to_numpy())
    gpus["outlier"] = np.select(
        [gpus["relative_rate"] < fence_low, gpus["relative_rate"] > fence_high], ["slow", "fast"], ""
    )
    excludes_one = (gpus["relative_ci_high"] < 1) | (gpus["relative_ci_low"] > 1)
    gpus["resolved"] = (gpus["outlier"] != "") & excludes_one
    return gpus


def tukey_fences(values: np.ndarray) -> tuple[float, float]:
    q1, q3 = np.nanpercentile(values, [25, 75])
    return q1 - TUKEY * (q3 - q1), q3 + TUKEY * (q3 - q1)


def _variation(values: np.ndarray, axis: int = -1) -> dict[str, np.ndarray]:
    """The four variation figures of per-GPU median rates, along `axis` (GPUs), in percent."""
    q1, median, q3 = np.percentile(values, [25, 50, 75], axis=axis, keepdims=True)
    inside = (values >= q1 - TUKEY * (q3 - q1)) & (values <= q3 + TUKEY * (q3 - q1))
    whisker_high = np.where(inside, values, -np.inf).max(axis=axis)
    whisker_low = np.where(inside, values, np.inf).min(axis=axis)
    median, q1, q3 = (a.squeeze(axis) for a in (median, q1, q3))
    return {
        "sc22_pct": (whisker_high - whisker_low) / median * 100,
        "spread_pct": (values.max(axis=axis) - values.min(axis=axis)) / values.min(axis=axis) * 100,
        "cv_pct": values.std(axis=axis) / values.mean(axis=axis) * 100,
        "iqr_pct": (q3 - q1) / median * 100,
    }


def _cluster_rows(gpus: pd.DataFrame, node_table: pd.DataFrame) -> list[dict[str, Any]]:
    rates = gpus["rate_median"].to_numpy(float)
    rows = [single("gpus", float(len(gpus)), "gpus"), single("nodes", float(gpus["node"].nunique()), "nodes")]
    rows.append(single("gpus_per_node", float(gpus.groupby("node").size().median()), "gpus", "median"))
    rows += [
        single("rate", float(np.median(rates)), "TFLOP/s", "cluster_median"),
        single("rate", float(gpus["rate_ci_low"].median()), "TFLOP/s", "cluster_median_ci_low"),
        single("rate", float(gpus["rate_ci_high"].median()), "TFLOP/s", "cluster_median_ci_high"),
    ]
    if len(gpus) >= 4:
        for name, (value, low, high) in over_units(rates, _variation).items():
            rows.append(single("variation", value, "%", name))
            if name not in EXTREMES:
                rows += [single("variation", low, "%", f"{name}_ci_low"),
                         single("variation", high, "%", f"{name}_ci_high")]  # fmt: skip
    slowest = gpus.loc[gpus["relative_rate"].idxmin()]
    rows += [
        single("rate_vs_cluster_median", float(slowest["relative_rate"]), "1", "min"),
        single("rate_vs_cluster_median", float(slowest["relative_ci_low"]), "1", "min_ci_low"),
        single("rate_vs_cluster_median", float(slowest["relative_ci_high"]), "1", "min_ci_high"),
        single("rate_vs_cluster_median", float(gpus["relative_rate"].max()), "1", "max"),
    ]
    slow = gpus[gpus["outlier"] == "slow"]
    rows += [
        single("outliers", float(len(slow)), "gpus", "slow"),
        single("outliers", float((gpus["outlier"] == "fast").sum()), "gpus", "fast"),
        single("outliers", float(slow["resolved"].sum()), "gpus", "slow_resolved"),
        single("outliers", float(slow["at_power_cap"].sum()), "gpus", "slow_at_power_cap"),
        single("outliers", float(slow["at_thermal_cap"].sum()), "gpus", "slow_at_thermal_cap"),
    ]
    rows += [single("node_split", value, "1", name) for name, value in nodes.node_split(gpus).items()]
    rows += nodes.spread_rows(node_table)
    for metric, _unit in CORRELATED:
        found = spearman_interval(gpus["rate_median"], gpus[f"{metric}_median"])
        if math.isfinite(found.value):
            rows += [single(f"rate_vs_{metric}", found.value, "1", "spearman"),
                     single(f"rate_vs_{metric}", found.low, "1", "spearman_ci_low"),
                     single(f"rate_vs_{metric}", found.high, "1", "spearman_ci_high")]  # fmt: skip
    return rows


def summarise(reps: pd.DataFrame, campaign: str) -> dict[str, pd.DataFrame]:
    """The campaign's tables from its reps (layout.read_campaign): `gpus` (long: one row per GPU, metric
    and statistic), `summary` (long: the cluster), `outliers` and `node_spreads` (one row per GPU / node)."""
    gpu_frames, summary_rows, outliers, node_tables = [], [], [], []
    for (profile, backend, n), group in reps.groupby(GROUP, sort=True):
        keys = {"campaign": campaign, "profile": profile, "backend": backend, "n": int(n)}
        gpus = per_gpu(group)
        node_table = nodes.node_spreads(gpus, nodes.gpus_alike_p_values(group))
        gpu_frames.append(long_gpus(gpus).assign(**keys))
        summary_rows += [{**keys, **row} for row in _cluster_rows(gpus, node_table)]
        outliers.append(gpus[gpus["outlier"] != ""].assign(**keys))
        node_tables.append(node_table.assign(**keys))
    key_columns = ["campaign", *GROUP]

    def ordered(frames: list[pd.DataFrame]) -> pd.DataFrame:
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=key_columns)
        return frame[key_columns + [c for c in frame.columns if c not in key_columns]]

    return {
        "gpus": ordered(gpu_frames),
        "summary": ordered([pd.DataFrame(summary_rows)]) if summary_rows else ordered([]),
        "outliers": ordered(outliers),
        # no node measured (each failed or was killed): the nodes table still lists every try
        "node_spreads": ordered(node_tables) if node_tables else pd.DataFrame(columns=[*key_columns, "node"]),
    }


# The per-GPU columns in the long table: (column prefix or name, metric, unit)
FLAGS = [
    ("reps", "reps"),
    ("throttled_reps", "reps"),
    ("power_cap_reps", "reps"),
    ("thermal_cap_reps", "reps"),
]


def long_gpus(gpus: pd.DataFrame) -> pd.DataFrame:
    """The per-GPU table in long form: one row per GPU, metric and statistic, with its unit."""
    ids = ["node", "gpu", *IDENTITY, "outlier", "at_power_cap", "at_thermal_cap"]
    parts = []
    for _column, metric, unit in [*METRICS, ("", "relative_rate", "1")]:
        source = {"median": f"{metric}_median", "ci_low": f"{metric}_ci_low", "ci_high": f"{metric}_ci_high"}
        if metric == "relative_rate":
            source = {"value": "relative_rate", "ci_low": "relative_ci_low", "ci_high": "relative_ci_high"}
        for statistic, column in source.items():
            parts.append(gpus[ids].assign(metric=metric, statistic=statistic, value=gpus[column], unit=unit))
    for column, unit in FLAGS:
        parts.append(gpus[ids].assign(metric=column, statistic="count", value=gpus[column], unit=unit))
    return pd.concat(parts, ignore_index=True)


def wide_gpus(long: pd.DataFrame) -> pd.DataFrame:
    """The long per-GPU table back to one row per GPU (`<metric>_<statistic>` columns), for figures and
    for comparing campaigns."""
    index = ["campaign", *GROUP, "node", "gpu", "gpu_uuid"]
    long = long.assign(column=long["metric"] + "_" + long["statistic"])
    wide = long.pivot(index=index, columns="column", values="value")
    flags = long.drop_duplicates(index)[[*index, "outlier", "at_power_cap", "at_thermal_cap"]]
    return wide.reset_index().merge(flags, on=index).rename(columns={"relative_rate_value": "relative_rate"})
