"""The report's landing page (verdict/render.py:landing_page) is valid reStructuredText for any verdict:
docutils parses the page of every verdict the tests make from made tables (one GPU, two GPUs, the
paper's GPU, no GPU) without a single warning or error. A page that does not parse opens the Snakemake
report on "System Message: ERROR/3 ... list-table" and the per-paper table as raw markup (issue 42)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pandas as pd
import pytest
from docutils import nodes
from docutils.core import publish_doctree

from gpurepro.hardware import load_hardware
from gpurepro.verdict import render
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.here import Here
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.outcome import Outcome
from gpurepro.verdict.statuses import UNMEASURED
from gpurepro.verdict.summary import PaperVerdict

from .conftest import ROOT
from .test_verdict import H100, H200, SCHEMA, _long, _power, _spread_table, h100_tables

A100 = "NVIDIA A100-SXM4-80GB"


def problems(page: str) -> list[str]:
    """Every docutils message about the page, at any level down to warnings (info included where the
    parser made one): parsing never halts, so each message is collected rather than only the first."""
    doctree = publish_doctree(
        page, settings_overrides={"report_level": 5, "halt_level": 5, "warning_stream": False}
    )
    return [
        f"{message['type']} (line {message.get('line')}): {message.astext()}"
        for message in doctree.findall(nodes.system_message)
        if message["level"] >= 2
    ]


def per_paper_rows(page: str) -> list[list[str]]:
    """The rows of the landing page's per-paper table, as docutils reads them."""
    doctree = publish_doctree(page, settings_overrides={"report_level": 5, "halt_level": 5})
    (table,) = doctree.findall(nodes.table)
    return [[entry.astext() for entry in row.findall(nodes.entry)] for row in table.findall(nodes.row)]


def two_gpu_tables() -> dict[str, pd.DataFrame]:
    """An H100 quick run's made tables on two GPUs: the studies of one GPU ran on GPU 0, the variability
    study on both, with the spread between them."""
    tables = h100_tables()
    variability = tables["variability_summary"]
    second = variability.assign(gpu_uuid="GPU-1", scope="gpu 1")
    spread = _spread_table(1.5, 2.5)["variability_summary"].query("scope == 'across gpus'")
    spread = spread.assign(gpu_name=H100, backend="cublas", n=25536)
    tables["variability_summary"] = pd.concat([variability, second, spread], ignore_index=True)
    return tables


def a100_tables() -> dict[str, pd.DataFrame]:
    """The inference artifact's GPU: its power claims judged exactly."""
    point = {"batch_size": 1, "precision": "fp16", "status": "ok"}
    rows = [
        *_long(A100, {**point, "model": "deit-b", "mode": "eager"}, [
            *_power(25.0, 1.0), ("latency", "median", 4.4, "ms"), ("latency", "iqr", 0.05, "ms"),
        ]),
        *_long(A100, {**point, "model": "deit-t", "mode": "eager"}, _power(7.0, 1.0)),
    ]  # fmt: skip
    return {"inference_deit": pd.DataFrame(rows)}


def h200_spread_tables() -> dict[str, pd.DataFrame]:
    return _spread_table(-0.3, 0.7)


MADE: dict[str, tuple[Callable[[], dict[str, pd.DataFrame]], int | None]] = {
    "one H100": (h100_tables, None),
    "one H100, run said 1 GPU": (h100_tables, 1),
    "two H100s": (two_gpu_tables, None),
    "two H200s, spread only": (h200_spread_tables, None),
    "an A100": (a100_tables, None),
    "no GPU (cpu)": (dict, None),
}


def shipped_outcomes(tables: dict[str, pd.DataFrame], gpus: int | None) -> tuple[list[Outcome], Here]:
    hardware = load_hardware(ROOT / "config" / "hardware")
    claims = load_claims([ROOT / "config" / "expected"], SCHEMA, hardware)
    return evaluate(claims, tables, hardware, gpu_count=gpus), Here.of(tables, gpus)


def made_landing_page(made: str = "one H100") -> str:
    """The landing page of a made verdict, for the pipeline test's report (tests/test_workflow.py): the
    cpu run's own page has no GPU verdict, so it never meets a multi-line reason or an empty cell."""
    make, gpus = MADE[made]
    outcomes, here = shipped_outcomes(make(), gpus)
    return render.landing_page(outcomes, "h100", here)


@pytest.mark.parametrize("made", list(MADE))
def test_the_landing_page_of_every_made_verdict_parses_without_a_message(made: str) -> None:
    make, gpus = MADE[made]
    outcomes, _ = shipped_outcomes(make(), gpus)
    page = made_landing_page(made)
    assert problems(page) == [], page
    rows = per_paper_rows(page)
    assert rows[0] == ["paper", "verdict", "claims", "not measured because"]
    assert len(rows) == 1 + len({o.claim.paper for o in outcomes if o.claim.purpose == "reproduction"})
    for row in rows[1:]:
        assert len(row) == 4 and all(row), row  # every cell written, none empty or turned into a list
    if made == "one H100":  # the reasons kept apart by "; ", each claim's id after its reason
        hfta = next(row for row in rows if row[0].startswith("HFTA"))
        assert "needs MIG partitions (the pipeline never changes a GPU's MIG layout;" in hfta[3]
        assert "a study mode for it) (hfta-speedup-over-mig)" in hfta[3]  # one line, its id after it
        sc22 = next(row for row in rows if row[0].startswith("SC22"))  # the outlier bound: not testable
        assert sc22[3].startswith("needs a cluster's worth of GPUs") and "(sc22-average-variation)" in sc22[3]


def test_multi_line_reasons_and_empty_or_markup_cells_stay_one_cell() -> None:
    """What broke the page: a reason with line breaks (a folded YAML string), an empty cell written "-"
    (a nested bullet list), and text that reStructuredText reads as markup at a cell's start."""
    paper = PaperVerdict(
        "- a paper *with* `markup` | and_underscores_",
        "not measured",
        Counter({UNMEASURED: 2}),
        (
            ("needs MIG partitions (a setup\nthis pipeline has no\n study mode for it)\n", ("a",)),
            ("1. first\n\n- then", ("b", "c")),
        ),
    )
    assert render._rst_cell("") == render.EMPTY_CELL
    for text in ("-", "1. x", "(a) x", "#. x", ".. x", ":x: y", "> x"):
        assert render._rst_cell(text).startswith("\\"), text
    page = "\n".join(
        [
            ".. list-table::",
            "   :header-rows: 1",
            "",
            "   * - paper",
            "     - counts",
            "     - not measured because",
            "     - empty",
            f"   * - {render._rst_cell(paper.paper)}",
            f"     - {render._rst_cell(paper.describe_counts())}",
            f"     - {render._rst_cell(paper.describe_unmeasured())}",
            f"     - {render._rst_cell('')}",
            "",
        ]
    )
    assert problems(page) == [], page
    assert per_paper_rows(page)[1] == [
        "- a paper *with* `markup` | and_underscores_",
        "2 not measured",
        "needs MIG partitions (a setup this pipeline has no study mode for it) (a); 1. first - then (b, c)",
        "none",
    ]


def test_a_broken_page_is_caught() -> None:
    """The check itself: the page as it was (a cell "-", a reason across two lines) fails it."""
    broken = "\n".join(
        [
            ".. list-table::",
            "   :header-rows: 1",
            "",
            "   * - paper",
            "     - not measured because",
            "   * - a paper",
            "     - -",
            "   * - another",
            "     - needs MIG partitions (no study mode for it)",
            " (hfta-speedup-over-mig)",
            "",
        ]
    )
    assert any("list-table" in problem for problem in problems(broken))


def test_the_page_names_the_gpus_of_a_two_gpu_run() -> None:
    outcomes, here = shipped_outcomes(two_gpu_tables(), None)
    assert here.gpu_count == 2
    page = render.landing_page(outcomes, "h100", here)
    assert f"Measured on {H100} (2 GPUs)." in page and H200 not in page
