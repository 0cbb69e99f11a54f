"""The two runs' verdicts side by side: each paper's headline, and every claim whose word changed.

A reviewer comparing two runs asks first whether the verdict moved, and a changed headline buried under
four hundred metric rows is missed. Both runs' tables are judged again by this checkout's claims
(verdict/rejudge.py, handed in by the command), as `gpurepro verdict` would judge them today: each
run's own verdict.md was drawn by the claims of its day, and a claim revised since would read as a
change in the measurements. A row per claim gives its word (`grade`: held, not held, inconclusive, not
testable, informational, not measured) and the status behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ABSENT = "(absent)"
CLAIM_COLUMNS = ["id", "paper", "claim", "grade", "status"]
CHANGED_COLUMNS = ["id", "paper", "claim", "grade_a", "grade_b", "status_a", "status_b"]


@dataclass(frozen=True)
class Judged:
    """One run judged again: each paper's headline and a row per claim (CLAIM_COLUMNS). Made by the
    verdict (verdict/rejudge.py, which `gpurepro compare` hands to outputs.write), so that the
    comparison, which the verdict reads, never reads the verdict."""

    papers: dict[str, str]
    claims: pd.DataFrame


# What judges a run folder again: verdict.rejudge.judged
Judge = Callable[[Path], Judged]
# A run not judged (compare.outputs.write given no judge): no verdict section
NONE = Judged({}, pd.DataFrame(columns=CLAIM_COLUMNS))


def side_by_side(a: Judged, b: Judged) -> pd.DataFrame:
    """A row per paper of either verdict: its headline in A and in B, and whether it changed."""
    first, second = a.papers, b.papers
    papers = [*first, *(paper for paper in second if paper not in first)]
    rows = [
        {"paper": paper, "a": first.get(paper, ABSENT), "b": second.get(paper, ABSENT)} for paper in papers
    ]
    table = pd.DataFrame(rows, columns=["paper", "a", "b"])
    return table.assign(changed=table["a"] != table["b"])


def changed_claims(a: Judged, b: Judged) -> pd.DataFrame:
    """Every claim whose word (grade) differs between the two verdicts, or that one of them lacks, with
    the status behind each word."""
    first, second = a.claims, b.claims
    if first.empty or second.empty:
        return pd.DataFrame(columns=CHANGED_COLUMNS)
    both = first.merge(second, on="id", how="outer", suffixes=("_a", "_b"), sort=False)
    for column in ("grade", "status"):
        for side in ("_a", "_b"):
            both[f"{column}{side}"] = both[f"{column}{side}"].fillna(ABSENT)
    both["paper"] = both["paper_a"].fillna(both["paper_b"])
    both["claim"] = both["claim_a"].fillna(both["claim_b"])
    changed = both[both["grade_a"] != both["grade_b"]]
    return changed[CHANGED_COLUMNS].reset_index(drop=True)


def summary(papers: pd.DataFrame, words: pd.DataFrame) -> str:
    """'1 of 5 headlines changed (HFTA ...), 2 claims changed word', or '' where neither run has one."""
    if papers.empty:
        return ""
    moved = papers[papers["changed"]]
    named = f" ({'; '.join(moved['paper'])})" if len(moved) else ""
    return (
        f"{len(moved)} of {len(papers)} paper headlines changed{named}, "
        f"{len(words)} claim{'s' if len(words) != 1 else ''} changed word"
    )
