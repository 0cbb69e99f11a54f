"""The comparison as a page to read (Markdown), the same page as HTML, and the tidy table (CSV)."""

from __future__ import annotations

import html
import math

import pandas as pd

from . import hostbound
from .grade import NOISE_FLOOR, NOT_COMPARABLE, SAME
from .points import short_uuid

HOW_GRADED = (
    "Each metric both runs measured is matched on its point's key columns (every column but the value, "
    "the run's identity, the process and the protocol) and compared as B/A of its median over the "
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
    "overlap); one without an interval is not graded. Everything else is *same within noise*. Not graded: "
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
    rows = table[~table["grade"].isin([SAME, NOT_COMPARABLE])]
    return rows.assign(point=rows["table"] + ": " + rows["point"].fillna(""))


HEADERS = ["point", "metric", "statistic", "unit", "A", "B", "B/A (B - A) [95% interval]", "grade"]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reference_line(changes: pd.DataFrame) -> str:
    """The reference rates' ratios B/A, where the runs measured different GPUs ('' where not)."""
    rates = changes[changes["field"].str.startswith("reference rate")]
    return "; ".join(f"{r.field.removeprefix('reference rate ')}: {r.note}" for r in rates.itertuples())


def markdown(table: pd.DataFrame, changes: pd.DataFrame, a: str, b: str) -> str:
    lines = [f"# Comparison: A = {a}, B = {b}", "", f"{counts(table)}.", ""]
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


def to_html(table: pd.DataFrame, changes: pd.DataFrame, a: str, b: str) -> str:
    """A standalone page (the Snakemake report shows HTML inline)."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>Comparison: {e(a)} vs {e(b)}</title>",
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin-bottom:1em}"
        "td,th{border:1px solid #999;padding:4px;vertical-align:top;text-align:left}</style>",
        "</head><body>",
        f"<h1>Comparison: A = {e(a)}, B = {e(b)}</h1>",
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
