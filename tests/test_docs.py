"""The guide's pages hold together: every relative link of the README, docs/ (guides and findings) and
the config READMEs reaches a file, and its #anchor a heading of that page, so that moving a section
cannot leave a reader at a dead link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import ROOT

PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "config").rglob("*.md")]
    + list((ROOT / "reference-runs").glob("*.md"))
)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = (
        line.lstrip("#").strip().lower() for line in page.read_text().splitlines() if line.startswith("#")
    )
    return {re.sub(r"[^\w\- ]", "", heading).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_page_and_heading(page: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"(https?:|mailto:)", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path) if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_the_guides_keep_their_dated_findings_apart() -> None:
    """Each guide's measured findings live in docs/findings/<page>, which the guide links."""
    for finding in (ROOT / "docs" / "findings").glob("*.md"):
        guide = (ROOT / "docs" / finding.name).read_text()
        assert f"(findings/{finding.name})" in guide and "\n### " not in guide.split("## Measured")[-1]


# The trees whose docstrings and comments point readers to the guide's pages
CODE = [ROOT / "Snakefile", *(ROOT / part for part in ("src", "workflow", "tests", "benchmarks", "config"))]


def _code_files() -> list[Path]:
    files = [path for path in CODE if path.is_file()]
    for tree in (path for path in CODE if path.is_dir()):
        files += [path for path in tree.rglob("*") if path.suffix in {".py", ".smk", ".yaml", ".md", ".rst"}]
    return files


def test_every_page_the_code_points_to_is_in_the_repository() -> None:
    """A docstring or comment that names docs/<page>.md names a page that exists, and the design notes
    it points to are docs/design.md, not a file outside the repository."""
    broken = []
    for path in _code_files():
        text = path.read_text(errors="replace")
        pages = re.findall(r"docs/[\w/.-]+?\.md", text)
        broken += [f"{path.relative_to(ROOT)}: {page}" for page in pages if not (ROOT / page).exists()]
        if re.search(r"(?<![\w/])DESIGN\.md", text):
            broken.append(f"{path.relative_to(ROOT)}: the design notes are docs/design.md")
    assert not broken, broken


def test_the_glossary_defines_every_word_the_verdict_prints() -> None:
    """Each word a paper's line, a claim's grade or its result ends in (gpurepro.verdict.statuses and
    summary) is a term of docs/glossary.md."""
    from gpurepro.verdict import statuses, summary

    words = {
        *statuses.GRADES,
        *(
            summary.REPRODUCED,
            summary.PARTIALLY,
            summary.NOT_REPRODUCED,
            summary.TOO_FEW,
            summary.NOT_MEASURED,
        ),
        *(
            statuses.WITHIN,
            statuses.OUTSIDE,
            statuses.ABOVE_RANGE,
            statuses.HOST_DEPENDENT,
            statuses.NOT_RESOLVED,
        ),
        *(statuses.NOT_TESTABLE, statuses.NOT_COMPARABLE, statuses.SHOWN, statuses.NOT_MEASURED),
        *(statuses.EXACT, statuses.SCALED, statuses.TRANSFERRED, statuses.OFF_PAPER),
    }
    terms = " | ".join(
        line.split("|")[1].replace("*", "").strip().lower()
        for line in (ROOT / "docs" / "glossary.md").read_text().splitlines()
        if line.startswith("| **")
    )
    defined = [term.strip() for term in re.split(r" \| |, | / |[()]", terms)]
    missing = sorted(word for word in words if not any(term.startswith(word.lower()) for term in defined))
    assert not missing, f"docs/glossary.md lacks {missing}"
