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
