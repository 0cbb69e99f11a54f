"""The verdict as a table (CSV), a page to read (Markdown), the same page for the HTML report, and the
per-paper summary for the report's landing page (reStructuredText). Every form opens with one line per
paper; the project's own regression checks follow in their own section, never counted as reproduced."""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from ..reference import REFERENCES
from .claims import REGRESSION, REPRODUCTION, Claim
from .here import Here
from .measured import HowMeasured
from .measurements import counted_once
from .outcome import Outcome
from .statuses import (
    GRADE_OF,
    GRADES,
    HELD,
    INFO,
    NOT_HELD,
    PARTLY,
    TESTABLE,
    UNMEASURED,
    UNRESOLVED,
    UNTESTABLE,
)
from .summary import PaperVerdict, paper_verdicts, regression_counts

COLUMNS = [
    "id",
    "purpose",
    "paper",
    "claim",
    "kind",
    "study",
    "status",
    "result",
    "grade",
    "processes",
    "judged",
    "paper_gpu",
    "measured_on",
    "measured",
    "measured_text",
    "unit",
    "expected",
    "expected_here",
    "scale_factor",
    "accepted_low",
    "accepted_high",
    "tolerance",
    "tolerance_why",
    "scaling_why",
    "detail",
    "sides",
    "counted_with",
    "plot",
    "source",
    "source_where",
    "source_url",
    "claim_file",
]

_MARKS = {
    HELD: "✅",
    PARTLY: "◐",
    NOT_HELD: "❌",
    UNRESOLVED: "≈",
    UNTESTABLE: "○",
    INFO: "ℹ",
    UNMEASURED: "–",
}
_COLOURS = {
    HELD: "#d4edda",
    PARTLY: "#fff3cd",
    NOT_HELD: "#f8d7da",
    UNRESOLVED: "#e2e3e5",
    UNTESTABLE: "#e2e3e5",
    INFO: "#e2e3e5",
    UNMEASURED: "#e2e3e5",
}

HOW_JUDGED = (
    "A *relative* claim (a ratio within one run) is judged on any GPU: its direction (e.g. a speedup "
    "above 1) apart from its magnitude, a direction or an ordering only where its 95% interval over "
    'processes resolves it, and "the GPUs differ" by its permutation test. A magnitude reads '
    "*consistent* (its interval inside the accepted range), *inconsistent* (outside) or *inconclusive "
    "at n processes* (the interval straddles an end; a figure from one process a side has an interval at "
    "least the measured between-process spread). An *absolute* claim (ms, images/s, W, J on the paper's "
    "GPU) is judged exactly on that GPU and *scaled* on others, like for like: a rate measured here "
    "against one measured on the paper's GPU, else datasheet against datasheet (config/hardware/), "
    "tolerance and scaling uncertainty combined in quadrature; where no rate makes a figure comparable "
    "it is *informational* or *not comparable*, with why. A range that cannot fail (it reaches 0, or is "
    "more than 2x as wide as the paper's figure), a bound over a population larger than this run's GPUs "
    "and a plateau from fewer than three sizes are *not testable here*, never held. *Partly held* is one "
    "thing: the direction holds and the magnitude is inconsistent. A paper's verdict counts only the "
    "testable claims (held, partly held, not held), says how many of its claims were testable here and "
    "how many are inconclusive; a claim this run could not measure is *not measured*, with the reason."
)


def source_text(outcome: Outcome) -> str:
    source = outcome.claim.source
    parts = [source.get("authors"), source.get("title"), source.get("venue")]
    return ", ".join(p for p in parts if p)


def describe_versions(source: dict) -> str:
    """The versions of a source that state different figures, the one the claims judge marked."""
    return "; ".join(
        f"{version['name']}{' (judged here)' if version['name'] == source.get('judged') else ''}: "
        + " ".join(version["says"].split())
        for version in source["versions"]
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def frame(outcomes: list[Outcome]) -> pd.DataFrame:
    rows = []
    for o in counted_once(outcomes):
        claim = o.claim
        low, high = o.accepted if o.judged else claim.accepted_range()
        if GRADE_OF[o.result] in (UNTESTABLE, INFO):  # a range that cannot fail, or none judged against
            low, high = math.nan, math.nan
        rows.append(
            {
                "id": claim.id,
                "purpose": claim.purpose,
                "paper": claim.paper,
                "claim": claim.claim,
                "kind": claim.kind,
                "study": claim.study,
                "status": o.status,
                "result": o.result,
                "grade": o.grade,
                "processes": ";".join("" if n is None else str(n) for n in o.processes),
                "judged": o.judged,
                "paper_gpu": o.describe_paper_gpus(),
                "measured_on": o.measured_on,
                "measured": o.measured,
                "measured_text": o.describe_measured(),
                "unit": claim.unit,
                "expected": claim.describe_expected(),
                "expected_here": o.describe_expected(),
                "scale_factor": o.factor,
                "accepted_low": _finite(low),
                "accepted_high": _finite(high),
                "tolerance": claim.tolerance.describe(claim.unit),
                "tolerance_why": claim.tolerance.why,
                "scaling_why": claim.scaling.why if claim.scaling else "",
                "detail": o.detail,
                "sides": o.sides,
                "counted_with": o.counted_with.id if o.counted_with is not None else "",
                "plot": o.plot or "",
                "source": source_text(o),
                "source_where": claim.source.get("where", ""),
                "source_url": claim.source.get("url", ""),
                "claim_file": claim.file,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(outcomes: list[Outcome]) -> str:
    """One line: the verdict of each paper, then the regression checks."""
    papers = "; ".join(f"{p.paper}: {p.headline}" for p in paper_verdicts(outcomes)) or "no paper claims"
    return f"{papers}. Regression checks: {regression_counts(outcomes)}"


def describe_here(here: Here) -> str:
    gpus = f"{here.describe()} ({here.gpu_count} GPU{'s' if here.gpu_count != 1 else ''})"
    rates = ", ".join(
        f"{name} {value:.4g} {REFERENCES.get(name, '')}" for name, value in here.references.items()
    )
    return f"Measured on {gpus}." + (f" Reference rates here: {rates}." if rates else "")


def describe_measured(measured: HowMeasured | None, drawn: str) -> list[str]:
    """How the run was measured, one line each, and when the verdict was drawn."""
    lines = (measured or HowMeasured()).lines()
    return [*lines, f"Verdict drawn {drawn} (UTC)"] if drawn else lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _judged(o: Outcome) -> str:
    return f"{o.claim.kind}; {o.describe_basis()}"


def _plot_link(o: Outcome) -> str:
    return f"[{o.claim.plot}]({o.plot})" if o.plot else (o.claim.plot or "")


def _claims_table(outcomes: list[Outcome]) -> list[str]:
    lines = [
        "| | claim | judged | expected here | measured | processes | verdict | plot |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        cells = [
            o.claim.claim,
            _judged(o),
            o.describe_expected(),
            o.describe_measured(),
            o.describe_processes(),
            o.status,
        ]
        lines.append(f"| {_MARKS[o.grade]} | {' | '.join(map(_cell, cells))} | {_plot_link(o)} |")
    return lines


def _papers_table(papers: list[PaperVerdict]) -> list[str]:
    lines = [
        "| paper | verdict | " + " | ".join(GRADES) + " | not measured because |",
        "|---|---|" + "---|" * len(GRADES) + "---|",
    ]
    for p in papers:
        counts = " | ".join(str(p.counts[grade]) for grade in GRADES)
        lines.append(f"| {_cell(p.paper)} | **{p.headline}** | {counts} | {_cell(p.describe_unmeasured())} |")
    return lines


def _details(outcomes: list[Outcome]) -> list[str]:
    lines: list[str] = []
    for o in outcomes:
        c = o.claim
        where = f" ({c.source['where']})" if "where" in c.source else ""
        url = f" <{c.source['url']}>" if "url" in c.source else ""
        lines += [
            f"### {c.id}: {o.status}",
            "",
            f"- claim ({c.kind}): {c.claim}",
            f"- judged: {o.describe_basis()}",
            f"- processes behind the figure: {o.describe_processes() or 'not recorded'}",
            f"- source: {source_text(o)}{where}{url}",
            f"- expected: {c.describe_expected()}; tolerance: {c.tolerance.why}",
        ]
        if c.scaling is not None:
            lines.append(f"- scaled to another GPU: {c.scaling.why}")
        if c.direction is not None:
            lines.append(f"- direction: the value is {c.direction.describe()}")
        lines += _protocol_lines(c)
        lines.append(f"- result: {o.detail}")
        if o.sides:
            lines.append(f"- GPUs of its sides: {o.sides}")
        if c.note:
            lines.append(f"- note: {c.note}")
        if c.source.get("versions"):
            lines.append(f"- versions of the source: {describe_versions(c.source)}")
        if c.source.get("note"):
            lines.append(f"- about the source: {c.source['note']}")
        lines.append("")
    return lines


def _protocol_lines(claim: Claim) -> list[str]:
    """The paper's workload beside ours and each difference; why a reading is not counted; revisions."""
    lines: list[str] = []
    protocol = claim.protocol
    if protocol is not None:
        lines += [f"- the paper measured: {protocol.paper}", f"- measured here: {protocol.here}"]
        for difference in protocol.differences:
            effect = "moves the figure" if difference.moves else "does not move the figure"
            lines.append(f"- difference ({effect}): {difference.what}; {difference.why}")
        if protocol.quick:
            lines.append(f"- a quick run reduces: {protocol.quick}")
    if claim.not_counted:
        lines.append(f"- shown, not counted toward the paper's verdict: {claim.not_counted}")
    for revision in claim.revisions:
        lines.append(
            f"- revised {revision.date}: {revision.change} ({revision.why}); before: {revision.before}; "
            f"after: {revision.after}"
        )
    return lines


def _split(outcomes: list[Outcome]) -> tuple[list[Outcome], list[Outcome]]:
    return (
        [o for o in outcomes if o.claim.purpose == REPRODUCTION],
        [o for o in outcomes if o.claim.purpose == REGRESSION],
    )


def markdown(
    outcomes: list[Outcome], profile: str, here: Here, measured: HowMeasured | None = None, drawn: str = ""
) -> str:
    outcomes = counted_once(outcomes)
    papers, regression = _split(outcomes)
    lines = [
        f"# Reproduction verdict: profile {profile}",
        "",
        describe_here(here),
        "",
        "## How it was measured",
        "",
        *(f"- {line}" for line in describe_measured(measured, drawn)),
        "",
        "## Per paper",
        "",
        *_papers_table(paper_verdicts(outcomes)),
        "",
        *_workloads(papers, quick=(measured or HowMeasured()).plan != "full"),
        HOW_JUDGED,
        "",
        "## Claims of the papers",
        "",
        *_claims_table(papers),
        "",
        "## Regression checks: this project's own earlier figures",
        "",
        "Not reproductions of a paper: they tell whether this run measures what the project measured "
        f"before. {regression_counts(outcomes)}.",
        "",
        *_claims_table(regression),
        "",
        "## Claims in detail",
        "",
        *_details(outcomes),
    ]
    return "\n".join(lines)


def _workloads(outcomes: list[Outcome], quick: bool = True) -> list[str]:
    """What each paper's testable readings rest on: the workload measured here for its claims that state
    their protocol, and, unless the run is known to be a full one, what a quick run reduces of it."""
    rests: dict[str, dict[str, list[str]]] = {}
    for o in outcomes:
        protocol = o.claim.protocol
        if protocol is None or o.grade not in TESTABLE:
            continue
        here = protocol.here + (f" (a quick run: {protocol.quick})" if quick and protocol.quick else "")
        rests.setdefault(o.claim.paper, {}).setdefault(here, []).append(o.claim.id)
    if not rests:
        return []
    lines = [
        "What the testable readings rest on (each claim's protocol beside the paper's: Claims in detail):",
        "",
    ]
    for paper, workloads in rests.items():
        for here, ids in workloads.items():
            lines.append(f"- {paper}: {here} ({', '.join(ids)})")
    return [*lines, ""]


PROTOCOL_TABLE_HEAD = (
    "| claim | the paper measured | measured here | differences | read | revisions |",
    "|---|---|---|---|---|---|",
)


def protocol_table(claims: list[Claim]) -> str:
    """Every claim's protocol as one Markdown table (docs/verdict.md holds it): the paper's workload,
    ours, each difference (marked where it moves the figure), how the claim is read, and its revisions."""
    lines = list(PROTOCOL_TABLE_HEAD)
    for claim in claims:
        protocol = claim.protocol
        differences = (
            "; ".join(f"{'**moves**: ' if d.moves else ''}{d.what}" for d in protocol.differences)
            if protocol is not None
            else ""
        )
        read = claim.kind + (f", not counted: {claim.not_counted}" if claim.not_counted else "")
        if claim.scaling is not None and claim.scaling.through:
            read += f", through {claim.scaling.through} beyond one generation"
        revisions = "; ".join(f"{r.date}: {r.change}" for r in claim.revisions)
        cells = [
            f"`{claim.id}`",
            protocol.paper if protocol else "(not stated)",
            protocol.here if protocol else "(not stated)",
            differences or "none named",
            read,
            revisions or "none",
        ]
        lines.append("| " + " | ".join(map(_cell, cells)) + " |")
    return "\n".join(lines)


def _html_papers(papers: list[PaperVerdict]) -> list[str]:
    e = html.escape
    head = "".join(f"<th>{e(grade)}</th>" for grade in GRADES)
    rows = [f"<table><tr><th>paper</th><th>verdict</th>{head}<th>not measured because</th></tr>"]
    for p in papers:
        counts = "".join(f"<td>{p.counts[grade]}</td>" for grade in GRADES)
        rows.append(
            f"<tr><td>{e(p.paper)}</td><td><b>{e(p.headline)}</b></td>{counts}"
            f"<td><small>{e(p.describe_unmeasured())}</small></td></tr>"
        )
    return [*rows, "</table>"]


def _html_claims(outcomes: list[Outcome]) -> list[str]:
    e = html.escape
    rows = [
        "<table><tr><th>claim</th><th>judged</th><th>expected here</th><th>measured</th><th>processes</th>"
        "<th>verdict</th><th>why this tolerance</th><th>source</th><th>plot</th></tr>"
    ]
    for o in outcomes:
        c = o.claim
        url = c.source.get("url")
        source = e(source_text(o)) + (f" ({e(c.source['where'])})" if "where" in c.source else "")
        if url:
            source = f'<a href="{e(url)}">{source}</a>'
        why = e(c.tolerance.why) + (f"<br>scaling: {e(c.scaling.why)}" if c.scaling else "")
        rows.append(
            f'<tr style="background:{_COLOURS[o.grade]}"><td>{e(c.claim)}<br><small>{e(c.id)}</small></td>'
            f"<td><small>{e(_judged(o))}</small></td><td>{e(o.describe_expected())}</td>"
            f"<td>{e(o.describe_measured())}</td><td>{e(o.describe_processes())}</td>"
            f"<td><b>{e(o.status)}</b><br><small>{e(o.detail)}</small>"
            + (f"<br><small>GPUs of its sides: {e(o.sides)}</small>" if o.sides else "")
            + "</td>"
            f"<td><small>{why}</small></td><td><small>{source}</small></td><td>{e(c.plot or '')}</td></tr>"
        )
    return [*rows, "</table>"]


def to_html(
    outcomes: list[Outcome], profile: str, here: Here, measured: HowMeasured | None = None, drawn: str = ""
) -> str:
    """A standalone page (the Snakemake report shows HTML inline; Markdown only as a download)."""
    e = html.escape
    outcomes = counted_once(outcomes)
    papers, regression = _split(outcomes)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html><head><meta charset="utf-8">',
            f"<title>Reproduction verdict: {e(profile)}</title>",
            "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin-bottom:1em}"
            "td,th{border:1px solid #999;padding:4px;vertical-align:top;text-align:left}</style>",
            "</head><body>",
            f"<h1>Reproduction verdict: profile {e(profile)}</h1>",
            f"<p>{e(describe_here(here))}</p>",
            "<h2>How it was measured</h2>",
            "<ul>" + "".join(f"<li>{e(line)}</li>" for line in describe_measured(measured, drawn)) + "</ul>",
            "<h2>Per paper</h2>",
            *_html_papers(paper_verdicts(outcomes)),
            f"<p>{e(HOW_JUDGED).replace('*', '')}</p>",
            "<h2>Claims of the papers</h2>",
            *_html_claims(papers),
            "<h2>Regression checks: this project's own earlier figures</h2>",
            f"<p>Not reproductions of a paper. {e(regression_counts(outcomes))}.</p>",
            *_html_claims(regression),
            "</body></html>",
            "",
        ]
    )


def _rst(text: str) -> str:
    """Text as reStructuredText shows it literally (no emphasis, links or substitutions)."""
    for char in "\\*`|_":
        text = text.replace(char, "\\" + char)
    return text


# What, at the start of a list-table cell, reStructuredText reads as markup rather than text: a bullet, an
# enumerator ("1.", "a)", "(i)"), a comment or directive (".."), a field (":x:"), a quote or a table line.
_CELL_MARKUP = re.compile(r"^([-+*•‣⁃#>|=~^:.]|\(?\w+[.)](\s|$))")
EMPTY_CELL = "none"


def _rst_cell(text: str) -> str:
    """One list-table cell: on one line (a line break, e.g. the end of a folded YAML string, ends the
    cell and breaks the table), literal, never read as markup at its start (a "-" there is a nested
    bullet list, which the list-table directive rejects), and never empty: "none" says so in words."""
    text = " ".join(text.split())
    if not text:
        return EMPTY_CELL
    text = _rst(text)
    return "\\" + text if _CELL_MARKUP.match(text) and not text.startswith("\\") else text


def landing_page(
    outcomes: list[Outcome], profile: str, here: Here, measured: HowMeasured | None = None, drawn: str = ""
) -> str:
    """reStructuredText for the Snakemake report's landing page: the verdict per paper, first."""
    title = f"Reproduction verdict: profile {profile}"
    lines = [
        title,
        "=" * len(title),
        "",
        _rst(describe_here(here)),
        "",
        *(f"- {_rst(line)}" for line in describe_measured(measured, drawn)),
        "",
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - paper",
        "     - verdict",
        "     - claims",
        "     - not measured because",
    ]
    for p in paper_verdicts(outcomes):
        lines += [
            f"   * - {_rst_cell(p.paper)}",
            f"     - **{_rst(' '.join(p.headline.split()))}**",
            f"     - {_rst_cell(p.describe_counts())}",
            f"     - {_rst_cell(p.describe_unmeasured())}",
        ]
    lines += [
        "",
        f"Regression checks (this project's own earlier figures, not reproductions): "
        f"{regression_counts(outcomes)}.",
        "",
        _rst(HOW_JUDGED.replace("*", "")),
        "Each claim, with its source, tolerance and result, is in the Verdict section of this report.",
        "",
    ]
    return "\n".join(lines)
