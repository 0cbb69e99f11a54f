"""The verdict as a table (CSV), a page to read (Markdown) and the same page for the HTML report."""

from __future__ import annotations

import html
import math
from collections import Counter

import pandas as pd

from .evaluate import NOT_APPLICABLE, NOT_MEASURED, OUTSIDE, STATUSES, WITHIN, Outcome

COLUMNS = [
    "id",
    "claim",
    "study",
    "status",
    "measured",
    "measured_text",
    "unit",
    "expected",
    "accepted_low",
    "accepted_high",
    "tolerance",
    "tolerance_why",
    "detail",
    "plot",
    "profiles",
    "source",
    "source_where",
    "source_url",
    "claim_file",
]

_MARKS = {WITHIN: "✅", OUTSIDE: "❌", NOT_MEASURED: "–", NOT_APPLICABLE: "n/a"}
_COLOURS = {WITHIN: "#d4edda", OUTSIDE: "#f8d7da", NOT_MEASURED: "#fff3cd", NOT_APPLICABLE: "#e2e3e5"}


def source_text(outcome: Outcome) -> str:
    source = outcome.claim.source
    parts = [source.get("authors"), source.get("title"), source.get("venue")]
    return ", ".join(p for p in parts if p)


def frame(outcomes: list[Outcome]) -> pd.DataFrame:
    rows = []
    for outcome in outcomes:
        claim = outcome.claim
        low, high = claim.accepted_range()
        rows.append(
            {
                "id": claim.id,
                "claim": claim.claim,
                "study": claim.study,
                "status": outcome.status,
                "measured": outcome.measured,
                "measured_text": outcome.describe_measured(),
                "unit": claim.unit,
                "expected": claim.describe_expected(),
                "accepted_low": None if math.isinf(low) else low,
                "accepted_high": None if math.isinf(high) else high,
                "tolerance": claim.tolerance.describe(claim.unit),
                "tolerance_why": claim.tolerance.why,
                "detail": outcome.detail,
                "plot": outcome.plot or "",
                "profiles": " ".join(claim.profiles),
                "source": source_text(outcome),
                "source_where": claim.source.get("where", ""),
                "source_url": claim.source.get("url", ""),
                "claim_file": claim.file,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(outcomes: list[Outcome]) -> str:
    counts = Counter(o.status for o in outcomes)
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) or "no claims"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(outcomes: list[Outcome], profile: str, gpus: list[str]) -> str:
    lines = [
        f"# Reproduction verdict: profile {profile}",
        "",
        f"GPUs measured: {', '.join(gpus) or 'none recorded'}. Claims: {summary(outcomes)}.",
        "",
        "A claim for another GPU model is *not applicable on this GPU*, not failed; a claim whose study did",
        "not run here (or whose size a quick run skipped) is *not measured*. Each claim's tolerance and the",
        "reason for it are below the table; its source is in `config/expected/`.",
        "",
        "| | claim | expected | measured | verdict | plot |",
        "|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        plot = f"[{o.claim.plot}]({o.plot})" if o.plot else (o.claim.plot or "")
        lines.append(
            f"| {_MARKS[o.status]} | {_cell(o.claim.claim)} | {_cell(o.claim.describe_expected())} | "
            f"{_cell(o.describe_measured())} | {o.status} | {plot} |"
        )
    lines += ["", "## Claims", ""]
    for o in outcomes:
        c = o.claim
        where = f" ({c.source['where']})" if "where" in c.source else ""
        url = f" <{c.source['url']}>" if "url" in c.source else ""
        lines += [
            f"### {c.id}: {o.status}",
            "",
            f"- claim: {c.claim}",
            f"- source: {source_text(o)}{where}{url}",
            f"- expected: {c.describe_expected()}; tolerance: {c.tolerance.why}",
            f"- result: {o.detail}",
        ]
        if c.note:
            lines.append(f"- note: {c.note}")
        if c.source.get("note"):
            lines.append(f"- about the source: {c.source['note']}")
        lines.append("")
    return "\n".join(lines)


def to_html(outcomes: list[Outcome], profile: str, gpus: list[str]) -> str:
    """A standalone page (the Snakemake report shows HTML inline; Markdown only as a download)."""
    e = html.escape
    rows = []
    for o in outcomes:
        c = o.claim
        url = c.source.get("url")
        source = e(source_text(o)) + (f" ({e(c.source['where'])})" if "where" in c.source else "")
        if url:
            source = f'<a href="{e(url)}">{source}</a>'
        rows.append(
            f'<tr style="background:{_COLOURS[o.status]}"><td>{e(c.claim)}<br><small>{e(c.id)}</small></td>'
            f"<td>{e(c.describe_expected())}</td><td>{e(o.describe_measured())}</td>"
            f"<td><b>{e(o.status)}</b><br><small>{e(o.detail)}</small></td>"
            f"<td><small>{e(c.tolerance.why)}</small></td><td><small>{source}</small></td>"
            f"<td>{e(c.plot or '')}</td></tr>"
        )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html><head><meta charset="utf-8">',
            f"<title>Reproduction verdict: {e(profile)}</title>",
            "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
            "td,th{border:1px solid #999;padding:4px;vertical-align:top;text-align:left}</style>",
            "</head><body>",
            f"<h1>Reproduction verdict: profile {e(profile)}</h1>",
            f"<p>GPUs measured: {e(', '.join(gpus) or 'none recorded')}. Claims: {e(summary(outcomes))}.</p>",
            "<p>A claim for another GPU model is <i>not applicable on this GPU</i>, not failed; a claim "
            "whose study did not run here (or whose size a quick run skipped) is <i>not measured</i>.</p>",
            "<table><tr><th>claim</th><th>expected</th><th>measured</th><th>verdict</th>"
            "<th>why this tolerance</th><th>source</th><th>plot</th></tr>",
            *rows,
            "</table></body></html>",
            "",
        ]
    )
