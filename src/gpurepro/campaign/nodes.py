"""A campaign read node by node: each node's spread (the seed project's figure for its one node), whether
its GPUs differ beyond their reps' noise, how far apart its GPUs began, and how much of the cluster's
variation lies between nodes rather than within them.

Whether a node's GPUs differ is the Kruskal-Wallis test of "the GPUs alike" over their reps' rates (the
reps of a node ranked together): distribution-free, as the variability study's permutation test is, and
one vectorised pass over every node where a permutation test per node would not scale to thousands of
nodes. Like that test, it takes each rep as a sample, so a slow run of one GPU counts as that GPU's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ..tables import single
from .intervals import over_units

ALPHA = 0.05  # a node's GPUs "differ" where its test's p-value is below it
MIN_NODES = 4  # nodes of two or more GPUs for an interval of the median node spread


def gpus_alike_p_values(reps: pd.DataFrame) -> pd.Series:
    """Per node, the Kruskal-Wallis p-value of "the node's GPUs alike" over their reps' rates (`tflops`),
    ties corrected for; NaN for a node with fewer than two GPUs."""
    reps = reps[["node", "device", "tflops"]].dropna()
    ranks = reps.groupby("node")["tflops"].rank()
    per_gpu = pd.DataFrame({"node": reps["node"], "device": reps["device"], "rank": ranks})
    gpus = per_gpu.groupby(["node", "device"])["rank"].agg(["sum", "size"])
    by_node = (gpus["sum"] ** 2 / gpus["size"]).groupby(level="node").sum()
    n = gpus["size"].groupby(level="node").sum()
    k = gpus["size"].groupby(level="node").size()
    h = 12 / (n * (n + 1)) * by_node - 3 * (n + 1)
    ties = reps.groupby(["node", "tflops"]).size()
    correction = 1 - ((ties**3 - ties).groupby(level="node").sum()) / (n**3 - n)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = pd.Series(scipy_stats.chi2.sf(h / correction, k - 1), index=h.index)
    return p.where(k > 1)


def node_spreads(gpus: pd.DataFrame, p_values: pd.Series | None = None) -> pd.DataFrame:
    """Per node: its GPUs, their spread (the seed's: (max - min) / min of median rates, in percent),
    its slowest GPU against the cluster median, how far apart its GPUs' timed reps began, and (given)
    the p-value of its GPUs alike."""
    grouped = gpus.groupby("node", sort=True)
    rate = grouped["rate_median"]
    found = pd.DataFrame({
        "gpus_measured": grouped.size(),
        "spread_pct": (rate.max() - rate.min()) / rate.min() * 100,
        "slowest_relative_rate": grouped["relative_rate"].min(),
        "start_skew_s": grouped["start_time"].max() - grouped["start_time"].min(),
    })  # fmt: skip
    if p_values is not None:
        found["gpus_alike_p_value"] = p_values.reindex(found.index)
    return found.reset_index()


def spread_rows(nodes: pd.DataFrame) -> list[dict[str, Any]]:
    """The cluster's node spread, over the nodes with two or more GPUs: its median with a seeded
    interval over resampled nodes (none from fewer than MIN_NODES) and its maximum; the median over
    nodes of the p-value of "the node's GPUs alike" (below ALPHA: in more than half the nodes the GPUs
    differ) and the share of nodes whose GPUs differ."""
    several = nodes[nodes["gpus_measured"] > 1]
    spreads = several["spread_pct"].to_numpy(float)
    if not len(spreads):
        return []
    median, low, high = float(np.median(spreads)), math.nan, math.nan
    if len(spreads) >= MIN_NODES:  # fewer nodes resample to the few values there are: no interval
        median, low, high = over_units(spreads, lambda v: {"median": np.median(v, axis=-1)})["median"]
    rows = [
        single("node_spread", median, "%", "median"),
        single("node_spread", low, "%", "median_ci_low"),
        single("node_spread", high, "%", "median_ci_high"),
        single("node_spread", float(spreads.max()), "%", "max"),
    ]
    if "gpus_alike_p_value" in several:
        p = several["gpus_alike_p_value"].dropna()
        if len(p):
            rows += [
                single("node_spread", float(p.median()), "1", "p_value_median"),
                single("node_spread", float((p < ALPHA).mean()), "1", "nodes_differ_share"),
            ]
    return rows


def node_split(gpus: pd.DataFrame) -> dict[str, float]:
    """The share of the variance of log rates between nodes and within them, and the F test's p-value
    (nodes with one GPU measured say nothing of within: left out)."""
    logs = np.log(gpus["rate_median"].to_numpy(float))
    nodes = gpus["node"].to_numpy()
    groups = [logs[nodes == node] for node in pd.unique(nodes)]
    groups = [group for group in groups if len(group) > 1]
    if len(groups) < 2:
        return {}
    pooled = np.concatenate(groups)
    total = float(((pooled - pooled.mean()) ** 2).sum())
    between = float(sum(len(g) * (g.mean() - pooled.mean()) ** 2 for g in groups))
    if total == 0:
        return {}
    return {
        "between_nodes_share": between / total,
        "within_nodes_share": 1 - between / total,
        "between_nodes_p_value": float(scipy_stats.f_oneway(*groups).pvalue),
    }
