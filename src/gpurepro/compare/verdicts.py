"""The two runs' verdicts side by side: each paper's headline, and every claim whose word changed.

A reviewer comparing two runs asks first whether the verdict moved, and a changed headline buried under
four hundred metric rows is missed. Each run folder keeps its verdict as drawn when it ran: verdict.md
opens with a "Per paper" table (paper, headline, counts), and verdict.csv has a row per claim with its
word (`grade`: held, not held, inconclusive, not testable, informational, not measured) and the status
behind it. Both are read as written, not redrawn: the comparison shows what each run concluded. A run
without a verdict (a folder of tables only) says so on its side.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..runs import verdict_headlines

VERDICT_MD, VERDICT_CSV = "verdict.md", "verdict.csv"
NO_VERDICT = "(no verdict in this run)"
ABSENT = "(absent)"
CLAIM_COLUMNS = ["id", "paper", "claim", "grade", "status"]
CHANGED_COLUMNS = ["id", "paper", "claim", "grade_a", "grade_b", "status_a", "status_b"]


def headlines(folder: Path) -> dict[str, str]:
    """Paper -> its headline, from the "Per paper" table of the run's verdict.md ({} without one)."""
    path = folder / VERDICT_MD
    return dict(verdict_headlines.headlines(path.read_text())) if path.is_file() else {}


def claims(folder: Path) -> pd.DataFrame:
    """A row per claim of the run's verdict.csv (id, paper, claim, grade, status); empty without one."""
    path = folder / VERDICT_CSV
    if not path.is_file():
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    return table.reindex(columns=CLAIM_COLUMNS, fill_value="")


def side_by_side(a: Path, b: Path) -> pd.DataFrame:
    """A row per paper of either verdict: its headline in A and in B, and whether it changed."""
    first, second = headlines(a), headlines(b)
    papers = [*first, *(paper for paper in second if paper not in first)]
    rows = [
        {
            "paper": paper,
            "a": first.get(paper, ABSENT if first else NO_VERDICT),
            "b": second.get(paper, ABSENT if second else NO_VERDICT),
        }
        for paper in papers
    ]
    table = pd.DataFrame(rows, columns=["paper", "a", "b"])
    return table.assign(changed=table["a"] != table["b"])


def changed_claims(a: Path, b: Path) -> pd.DataFrame:
    """Every claim whose word (grade) differs between the two verdicts, or that one of them lacks, with
    the status behind each word."""
    first, second = claims(a), claims(b)
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
