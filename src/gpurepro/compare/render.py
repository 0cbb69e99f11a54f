"""The comparison as a page to read (Markdown), the same page as HTML, and the tidy table (CSV). Both
pages open with the two runs' verdicts side by side (verdicts.py): a changed headline is the news."""

from __future__ import annotations

import html
import math

import pandas as pd

from . import hostbound, verdicts
from .grade import NOISE_FLOOR, NOT_A_CHANGE, NOT_COMPARABLE
from .margins import MARGINS
from .points import COUNTED, short_uuid

HOW_GRADED = (
    "Each metric both runs measured is matched on its point's key columns (every column but the value, "
    f"the run's identity, the process, the protocol, and how many processes and repeats measured it: "
    f"{', '.join(COUNTED)}, shown in counted_a/counted_b) and compared as B/A of its median over the "
    "point's processes (each process one value: its median, else its single value). A change is resolved "
    "only where the ratio's 95% interval across processes excludes 1: Welch's t-interval where both runs "
    "measured the point in at least two processes, never narrower than the spread measured for its kind "
    "of figure allows; with one process on a side, that between-process "
    "spread the project measured for that study and kind of figure (host-paced or GPU-bound; "
    "config/between_process.yaml), as the row's basis says. Raw reps inside one process show that "
    "process's noise only: they can keep a one-process change unresolved, never resolve one. A study "
    "without a measured spread falls back to the noise floor of the metric's kind "
    f"({', '.join(f'{kind} {floor:.0%}' for kind, floor in NOISE_FLOOR.items() if kind != 'dispersion')}). "
    "Host-paced: inference points whose GPU was busy under "
    f"{hostbound.HOST_BOUND_BELOW_PCT:.0f}% of the energy window in both runs (host-bound points), HFTA's "
    f"stock steps at B <= {hostbound.HFTA_HOST_PACED_B} and "
    "serial mode; figures taken at rest (idle power, clocks) are GPU-bound anywhere. Dispersions (CVs, "
    "spreads between GPUs) are read as B - A in their own unit (percentage points for a spread), resolved "
    "only where the interval of the difference excludes 0 (where the two sides' intervals do not "
    "overlap). Counts (throttled reps, blocks, units) are compared as counts: each side's sum over its "
    "processes, by the exact conditional test of two Poisson counts, never by a time's spread. An unresolved "
    "change is *same within noise* only where its whole interval lies inside the equivalence margin of its "
    f"kind ({', '.join(m.describe(kind).removeprefix('margin ') for kind, m in MARGINS.items())}; "
    "docs/compare.md says why each); an interval too wide for that is *unresolved at this spread*, and "
    "equal counts are the same. Not graded: "
    "the runtimes table, the tables derived across processes (names ending in _processes), counts of how a "
    "measurement was taken (inferences per window). Time and rate changes read faster/slower, others "
    "higher/lower. A point measured on one side only, with another protocol or unit, or without a value, "
    "is *not comparable*, with the reason."
)
SHOWN = ["point", "metric", "statistic", "unit", "a_value", "b_value", "ratio", "summary"]


def counts(table: pd.DataFrame) -> str:
    """'12 same within noise, 3 slower, 1 not comparable' over the table's rows."""
    tally = table["grade"].value_counts()
    return ", ".join(f"{count} {grade}" for grade, count in tally.items()) or "nothing to compare"


def _number(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) and math.isfinite(value) else ""


def _ratio(row: pd.Series) -> str:
    """B/A with its interval, or for a dispersion B - A with the interval of the difference."""
    if not (isinstance(row["ratio"], float) and math.isfinite(row["ratio"])):
        difference = row.get("difference")
        if not (isinstance(difference, float) and math.isfinite(difference)):
            return ""
        interval = (
            f" [{row['diff_low']:.4g}, {row['diff_high']:.4g}]" if pd.notna(row.get("diff_low")) else ""
        )
        return f"B - A {difference:+.4g}{interval}"
    interval = f" [{row['ci_low']:.4g}, {row['ci_high']:.4g}]" if pd.notna(row.get("ci_low")) else ""
    return f"{row['ratio']:.4g}{interval}"


def _cells(row: pd.Series) -> list[str]:
    return [
        str(row["point"] if pd.notna(row["point"]) else ""),
        str(row["metric"]),
        str(row["statistic"] if pd.notna(row["statistic"]) else ""),
        str(row["unit"] if pd.notna(row["unit"]) else ""),
        _number(row["a_value"]),
        _number(row["b_value"]),
        _ratio(row),
        str(row["summary"]),
    ]


def _uuids(cells: pd.Series) -> set[str]:
    return {uuid for cell in cells.dropna().astype(str) for uuid in cell.split(";") if uuid}


def gpu_line(rows: pd.DataFrame) -> str:
    """Which GPUs each run's rows came from (by UUID), and how many rows' sides ran on different GPUs;
    '' where neither run's tables name a GPU (the CPU, or tables older than the UUID columns)."""
    if not {"gpu_uuids_a", "gpu_uuids_b"} <= set(rows.columns):
        return ""
    a, b = _uuids(rows["gpu_uuids_a"]), _uuids(rows["gpu_uuids_b"])
    if not a and not b:
        return ""
    both = rows[(rows["gpu_uuids_a"].fillna("") != "") & (rows["gpu_uuids_b"].fillna("") != "")]
    differ = int((both["gpu_uuids_a"] != both["gpu_uuids_b"]).sum())

    def named(uuids: set[str]) -> str:
        return ", ".join(short_uuid(u) for u in sorted(uuids)) or "not recorded"

    return (
        f"GPUs: A's rows on {named(a)}, B's on {named(b)}; {differ} of {len(both)} rows compare processes "
        "on different GPUs (gpu_uuids_a, gpu_uuids_b in compare.csv)."
    )


def resolved(table: pd.DataFrame) -> pd.DataFrame:
    """The rows whose change exceeds the noise, their point prefixed with its table: what a reader looks
    for first, gathered from every study."""
    rows = table[~table["grade"].isin(NOT_A_CHANGE)]
    return rows.assign(point=rows["table"] + ": " + rows["point"].fillna(""))


VERDICT_HEADERS = ["paper", "A", "B", ""]
CLAIM_HEADERS = ["claim", "paper", "A", "B", "A's status", "B's status"]


def _verdict_rows(papers: pd.DataFrame) -> list[list[str]]:
    return [[r.paper, r.a, r.b, "changed" if r.changed else ""] for r in papers.itertuples()]


def _claim_rows(words: pd.DataFrame) -> list[list[str]]:
    return [
        [f"{r.id}: {r.claim}", r.paper, r.grade_a, r.grade_b, r.status_a, r.status_b]
        for r in words.itertuples()
    ]


def _verdict_lead(papers: pd.DataFrame | None, words: pd.DataFrame | None) -> tuple[str, str]:
    """The verdict section's first sentence and the changed claims' sentence."""
    if papers is None or words is None or papers.empty:
        return "Neither run holds a verdict (verdict.md): no headline to compare.", ""
    lead = f"{verdicts.summary(papers, words)}; both runs judged by this checkout's claims."
    claims = f"{len(words)} claims changed word." if len(words) else "No claim changed word."
    return lead, claims


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return [
        f"| {' | '.join(headers)} |",
        "|" + "---|" * len(headers),
        *(f"| {' | '.join(map(_md_cell, row))} |" for row in rows),
    ]


def _md_verdicts(papers: pd.DataFrame | None, words: pd.DataFrame | None) -> list[str]:
    lead, claims = _verdict_lead(papers, words)
    lines = ["## Verdicts", "", lead, ""]
    if papers is None or words is None or papers.empty:
        return lines
    lines += [*_md_table(VERDICT_HEADERS, _verdict_rows(papers)), "", claims, ""]
    if len(words):
        lines += [*_md_table(CLAIM_HEADERS, _claim_rows(words)), ""]
    return lines


HEADERS = ["point", "metric", "statistic", "unit", "A", "B", "B/A (B - A) [95% interval]", "grade"]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reference_line(changes: pd.DataFrame) -> str:
    """The reference rates' ratios B/A, where the runs measured different GPUs ('' where not)."""
    rates = changes[changes["field"].str.startswith("reference rate")]
    return "; ".join(f"{r.field.removeprefix('reference rate ')}: {r.note}" for r in rates.itertuples())


def markdown(
    table: pd.DataFrame,
    changes: pd.DataFrame,
    a: str,
    b: str,
    papers: pd.DataFrame | None = None,
    words: pd.DataFrame | None = None,
) -> str:
    """The page: the verdicts side by side, the counts of each grade, what changed, how graded, then the
    changes beyond noise and a section per study."""
    lines = [f"# Comparison: A = {a}, B = {b}", "", *_md_verdicts(papers, words)]
    lines += ["## Metrics", "", f"{counts(table)}.", ""]
    if host_bound := hostbound.tally(table):
        lines += [host_bound, ""]
    lines += ["## What changed", ""]
    if changes.empty:
        lines.append("Nothing the sidecars record differs between the runs.")
    else:
        lines += ["| field | A | B | note |", "|---|---|---|---|"]
        lines += [
            f"| {' | '.join(_md_cell(str(v)) for v in row)} |" for row in changes.itertuples(index=False)
        ]
    lines += ["", "## How graded", "", HOW_GRADED, ""]
    reference = reference_line(changes)
    sections = [("Changes beyond noise", resolved(table)), *table.groupby("study", sort=True)]
    for study, rows in sections:
        lines += [f"## {study}", "", f"{counts(rows)}."]
        if gpus := gpu_line(rows):
            lines += ["", gpus]
        if reference:
            lines += ["", f"Different GPUs: reference rates B/A: {reference}."]
        lines += ["", f"| {' | '.join(HEADERS)} |", "|" + "---|" * len(HEADERS)]
        lines += [f"| {' | '.join(map(_md_cell, _cells(row)))} |" for _, row in rows.iterrows()]
        lines.append("")
    return "\n".join(lines)


def _html_table(headers: list[str], rows: list[list[str]], colours: list[str] | None = None) -> list[str]:
    e = html.escape
    out = ["<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in headers) + "</tr>"]
    for index, cells in enumerate(rows):
        style = f' style="background:{colours[index]}"' if colours and colours[index] else ""
        out.append(f"<tr{style}>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    return [*out, "</table>"]


def _colour(row: pd.Series) -> str:
    if row["grade"] == NOT_COMPARABLE:
        return "#eeeeee"
    return {"B better": "#d4edda", "B worse": "#f8d7da"}.get(str(row["better"]), "")


def to_html(
    table: pd.DataFrame,
    changes: pd.DataFrame,
    a: str,
    b: str,
    papers: pd.DataFrame | None = None,
    words: pd.DataFrame | None = None,
) -> str:
    """A standalone page (the Snakemake report shows HTML inline), in the Markdown page's order."""
    e = html.escape
    lead, claims = _verdict_lead(papers, words)
    verdict = ["<h2>Verdicts</h2>", f"<p>{e(lead)}</p>"]
    if papers is not None and words is not None and not papers.empty:
        changed = ["#f8d7da" if flag else "" for flag in papers["changed"]]
        verdict += [*_html_table(VERDICT_HEADERS, _verdict_rows(papers), changed), f"<p>{e(claims)}</p>"]
        verdict += _html_table(CLAIM_HEADERS, _claim_rows(words)) if len(words) else []
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>Comparison: {e(a)} vs {e(b)}</title>",
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin-bottom:1em}"
        "td,th{border:1px solid #999;padding:4px;vertical-align:top;text-align:left}</style>",
        "</head><body>",
        f"<h1>Comparison: A = {e(a)}, B = {e(b)}</h1>",
        *verdict,
        "<h2>Metrics</h2>",
        f"<p>{e(counts(table))}.</p>",
        *([f"<p>{e(note)}</p>"] if (note := hostbound.tally(table)) else []),
        "<h2>What changed</h2>",
    ]
    if changes.empty:
        parts.append("<p>Nothing the sidecars record differs between the runs.</p>")
    else:
        parts += _html_table(["field", "A", "B", "note"], changes.astype(str).values.tolist())
    parts += ["<h2>How graded</h2>", f"<p>{e(HOW_GRADED).replace('*', '')}</p>"]
    reference = reference_line(changes)
    for study, rows in [("Changes beyond noise", resolved(table)), *table.groupby("study", sort=True)]:
        parts += [f"<h2>{e(str(study))}</h2>", f"<p>{e(counts(rows))}.</p>"]
        if gpus := gpu_line(rows):
            parts.append(f"<p>{e(gpus)}</p>")
        if reference:
            parts.append(f"<p>Different GPUs: reference rates B/A: {e(reference)}.</p>")
        cells = [_cells(row) for _, row in rows.iterrows()]
        parts += _html_table(HEADERS, cells, [_colour(row) for _, row in rows.iterrows()])
    return "\n".join([*parts, "</body></html>", ""])
