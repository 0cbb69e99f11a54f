"""Campaign against campaign: is a slow GPU slow again?

Two campaigns' per-GPU tables (campaign_gpus.csv) are matched GPU by GPU on the UUID (a card keeps it
when it moves to another node or slot), per backend and N. Across the GPUs both measured: Spearman's
rank correlation of their rates relative to their own cluster's median, with a seeded bootstrap
interval over the GPUs (near 1: the same cards are slow again; near 0: which card is slow was noise).
Per GPU: its relative rate in each, the ratio B/A with an interval from each side's interval (the ends
of the ratio of the ends, so it covers at least as well as they do), and `changed` where that interval
excludes 1: the card's standing in its cluster moved beyond its reps' noise. A whole cluster made faster
or slower (a driver, a clock policy) moves no card's standing; `rate_ratio` shows it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..campaign import aggregate
from ..campaign.intervals import spearman_interval
from ..campaign.tables import wide_gpus
from ..results import write_derived, write_table
from ..tables import single
from . import destination

KEYS = ["backend", "n"]
NAMES = ("campaign_compare.csv", "campaign_compare_gpus.csv", "campaign_compare.md")


def match_gpus(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """One row per GPU (by UUID) of either campaign, with each side's node, rates and outlier flag;
    `in` says which side measured it (both, a, b)."""
    columns = [*KEYS, "gpu_uuid", "node", "gpu", "rate_median", "rate_ci_low", "rate_ci_high",
               "relative_rate", "relative_rate_ci_low", "relative_rate_ci_high", "outlier"]  # fmt: skip
    sides = [wide_gpus(table)[columns] for table in (a, b)]
    matched = sides[0].merge(sides[1], on=[*KEYS, "gpu_uuid"], how="outer", suffixes=("_a", "_b"),
                             indicator="in")  # fmt: skip
    matched["in"] = matched["in"].map({"both": "both", "left_only": "a", "right_only": "b"}).astype(str)
    both = matched["in"] == "both"
    matched["rate_ratio"] = matched["rate_median_b"] / matched["rate_median_a"]
    matched["relative_ratio"] = matched["relative_rate_b"] / matched["relative_rate_a"]
    matched["relative_ratio_ci_low"] = matched["relative_rate_ci_low_b"] / matched["relative_rate_ci_high_a"]
    matched["relative_ratio_ci_high"] = matched["relative_rate_ci_high_b"] / matched["relative_rate_ci_low_a"]
    matched["changed"] = both & (
        (matched["relative_ratio_ci_low"] > 1) | (matched["relative_ratio_ci_high"] < 1)
    )
    matched["moved"] = both & (matched["node_a"] != matched["node_b"])
    matched["slow_in_both"] = (matched["outlier_a"] == "slow") & (matched["outlier_b"] == "slow")
    return matched


def summarise(matched: pd.DataFrame) -> pd.DataFrame:
    """Per backend and N: the GPUs each side had, the rank correlation with its interval, how many
    changed standing, moved node, or were slow outliers in both."""
    rows = []
    for (backend, n), group in matched.groupby(KEYS, sort=True):
        both = group[group["in"] == "both"]
        found = spearman_interval(both["relative_rate_a"], both["relative_rate_b"])
        keys = {"backend": backend, "n": int(n)}
        figures = [
            single("gpus", float(len(both)), "gpus", "matched"),
            single("gpus", float((group["in"] == "a").sum()), "gpus", "only_a"),
            single("gpus", float((group["in"] == "b").sum()), "gpus", "only_b"),
            single("rank_correlation", found.value, "1", "spearman"),
            single("rank_correlation", found.low, "1", "spearman_ci_low"),
            single("rank_correlation", found.high, "1", "spearman_ci_high"),
            single(
                "rate_ratio", float(np.median(both["rate_ratio"])) if len(both) else np.nan, "1", "median"
            ),
            single("gpus", float(both["changed"].sum()), "gpus", "changed_standing"),
            single("gpus", float(both["moved"].sum()), "gpus", "moved_node"),
            single("gpus", float(both["slow_in_both"].sum()), "gpus", "slow_in_both"),
        ]
        rows += [{**keys, **row} for row in figures]
    return pd.DataFrame(rows)


def write(a: Path | str, b: Path | str, out: Path | str) -> tuple[list[Path], str]:
    """Compare two campaigns' per-GPU tables; write the summary, the per-GPU matches and a page naming
    the GPUs that changed standing or were slow in both into `out` (each file atomically, in a folder
    that holds no other pair's comparison: destination.py)."""
    matched = match_gpus(pd.read_csv(a), pd.read_csv(b))
    summary = summarise(matched)
    out = Path(out)
    destination.claim(out, a, b)
    paths = [out / name for name in NAMES]
    write_table(summary, paths[0], "--out")
    write_table(matched, paths[1], "--out")
    lines = []
    for (backend, n), group in summary.groupby(KEYS):
        value = dict(zip(group["statistic"], group["value"], strict=True))
        lines.append(
            f"{backend} N={n}: {int(value['matched'])} GPUs matched by UUID, rank correlation "
            f"{value['spearman']:.2f} [{value['spearman_ci_low']:.2f}, {value['spearman_ci_high']:.2f}], "
            f"{int(value['changed_standing'])} changed standing, {int(value['slow_in_both'])} slow in both"
        )
    write_derived(paths[2], _page(matched, lines, a, b), "--out")
    return paths, "; ".join(lines)


def write_folders(a: Path | str, b: Path | str, out: Path | str) -> tuple[list[Path], str]:
    """Compare two campaign folders (results/<device>/campaign/<name>) by their per-GPU tables."""
    destination.refuse_self(a, b)
    return write(aggregate.table_path(a, "gpus"), aggregate.table_path(b, "gpus"), out)


def _page(matched: pd.DataFrame, lines: list[str], a: Path | str, b: Path | str) -> str:
    """The comparison to read: one line per backend and N, then each GPU that changed standing or was a
    slow outlier in both, by node, GPU and UUID."""
    shown = matched[matched["changed"] | matched["slow_in_both"]].sort_values("relative_ratio")
    rows = [
        f"| {r.backend} {r.n} | {r.node_a}/{r.gpu_a} | {r.node_b}/{r.gpu_b} | {r.gpu_uuid} | "
        f"{r.relative_rate_a:.4f} | {r.relative_rate_b:.4f} | {r.relative_ratio:.4f} "
        f"[{r.relative_ratio_ci_low:.4f}, {r.relative_ratio_ci_high:.4f}] | "
        f"{'changed' if r.changed else ''}{', ' if r.changed and r.slow_in_both else ''}"
        f"{'slow in both' if r.slow_in_both else ''} |"
        for r in shown.itertuples()
    ]
    return "\n".join([
        f"# Campaign against campaign: B ({b}) against A ({a})",
        "",
        *(f"- {line}" for line in lines),
        "",
        "GPUs matched by UUID. A GPU's standing is its rate over its own cluster's median GPU; it changed "
        "where the interval of B's standing over A's excludes 1.",
        "",
        "| backend N | A: node/GPU | B: node/GPU | UUID | standing A | standing B | B / A [95%] | |",
        "|---|---|---|---|---|---|---|---|",
        *(rows or ["| none | | | | | | | |"]),
        "",
    ])  # fmt: skip
