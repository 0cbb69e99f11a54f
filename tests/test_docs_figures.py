"""The figures the README and docs/ quote from the workflow's plan (job counts, the estimate a dry-run
prints, each study's jobs and time) are the code's: each plan is dry-run once in a copy of the workflow
(gpurepro.runplan.docs_figures) and every sentence below must read with its figures.

Measured wall times ("took 10 min 46 s") are measurements, not checked here. A printed wall time follows
the order Snakemake lists the jobs in, which moves with the folder the workflow is in, so it is matched
within WALL_TOLERANCE; counts and each study's time are matched exactly."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from pathlib import Path

import pytest

from gpurepro.runplan import docs_figures

from .conftest import HAVE_GPU, ROOT, copy_workflow, import_installable

pytestmark = pytest.mark.skipif(
    HAVE_GPU, reason="NVML sees GPUs here: the plans follow them and their temperature, not the guide's"
)

# figures read as "about": the simulated wall time of the jobs in the order Snakemake lists them
APPROXIMATE = {"wall", "worst"}
WALL_TOLERANCE = 0.03

RUNTIME = "docs/runtime.md"
# (page, plan, sentence): the sentence, with the plan's figures in place of its {fields}, is on the page
# (line breaks and runs of spaces read as one space). Fields: Figures.as_text.
QUOTED = [
    ("README.md", "cpu", "small sizes and synthetic data, {jobs} jobs in"),
    ("README.md", "quick_h100", "# the points behind every claim: {jobs} jobs,"),
    ("README.md", "full_h100", "# every sweep in full: {jobs} jobs, about {wall} on one H100"),
    ("README.md", "full_h100", "full plan prints about {wall} on one H100"),
    ("README.md", "full_h100_x4", "({wall} placed on four GPUs"),
    (RUNTIME, "quick_h100", "gpurepro: {jobs} jobs planned, about {wall} with 16 cores; from the studies'"),
    (
        RUNTIME,
        "quick_h100",
        "gpurepro: measurements: inference {inference_jobs} jobs {inference_time}, hfta {hfta_jobs} jobs "
        "{hfta_time}, sgemm {sgemm_jobs} jobs {sgemm_time}, ddp {ddp_jobs} jobs {ddp_time}, reference "
        "{reference_jobs} job {reference_time}.",
    ),
    (RUNTIME, "quick_h100", "gpurepro: and at worst {extra} more processes where claims stay"),
    (RUNTIME, "quick_h100", "about {worst} in all."),
    (RUNTIME, "full_h100_slurm", "the full H100 plan ({jobs} jobs) about half an hour, the quick plan"),
    (RUNTIME, "quick_h100_slurm", "the quick plan {wall}. On the cluster the simulated wall time"),
    (RUNTIME, "full_h100", "| 1 | 9 h 53 min | {wall} | {worst} | | |"),
    (RUNTIME, "full_h100_x4", "| 4 | 5 h 48 min | {wall} | {worst} | 1 h 07 min | {gpus_each} |"),
    (RUNTIME, "full_h100_x8", "| 8 | 5 h 10 min | {wall} | {worst} | 51 min 20 s | {gpus_each} |"),
    (
        RUNTIME,
        "full_h100_x4",
        "gpurepro: 4 GPUs side by side, {gpus_each} of jobs each (claim groups packed onto them: "
        "placement.json); jobs that take every core run one at a time with nothing beside them, "
        "{every_core} in all",
    ),
    (RUNTIME, "full_h100_x4", "the host-paced points, {every_core} of the plan with nothing beside them"),
    (RUNTIME, "cpu", "| full defaults | cpu profile, 2 cores | {jobs} |"),
    (RUNTIME, "quick_cpu", "| `quick=true` | cpu profile, 2 cores | {jobs} |"),
    (
        RUNTIME,
        "quick_h100",
        "| 1 x H100 | {jobs} planned, up to {extra} extra processes | about {wall} by the models",
    ),
    (RUNTIME, "quick_h100", "the energy windows' waits for the counter's updates, {worst} at worst;"),
    (RUNTIME, "full_h100", "| 1 x H100 | {jobs} | about {wall} by the models, {worst} at worst"),
    (RUNTIME, "quick_h100", "a fresh quick run prints {wall}"),
    ("docs/hfta.md", "quick_h100", "each in three processes, {hfta_jobs} jobs."),
    ("docs/hfta.md", "full_h100", "A full H100 sweep is {hfta_jobs} jobs, about {hfta_time} by the run plan"),
    ("docs/index.md", "quick_h100", "ResNet-18 in AMP, each in three processes: {hfta_jobs} jobs."),
    ("docs/inference.md", "full_h100", "H100 sweep is {inference_jobs} jobs, about {inference_time} by"),
]  # fmt: skip

DURATION = docs_figures.DURATION


def _seconds(duration: str) -> int:
    units = {"h": 3600, "min": 60, "s": 1}
    return sum(int(value) * units[unit] for value, unit in re.findall(r"(\d+) (h|min|s)\b", duration))


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], docs_figures.Figures]:
    """Each plan's figures, dry-run once for the whole module in one copy of the workflow."""
    workflow = copy_workflow(tmp_path_factory.mktemp("workflow"))
    found: dict[str, docs_figures.Figures] = {}

    def figures(name: str) -> docs_figures.Figures:
        if name not in found:
            if name in docs_figures.SLURM_PLANS:
                import_installable("snakemake_executor_plugin_slurm")
            found[name] = docs_figures.figures(workflow, name)
        return found[name]

    return figures


def _reads(page: str, sentence: str, figures: docs_figures.Figures) -> str | None:
    """None where `page` holds `sentence` with the plan's figures, else what is wrong."""
    named = figures.as_text()
    pattern, approximate = "", []
    for literal, field, _, _ in string.Formatter().parse(sentence):
        pattern += re.escape(literal)
        if field is None:
            continue
        if field in APPROXIMATE:
            pattern += f"({DURATION})"
            approximate.append(field)
        elif field in named:
            pattern += re.escape(named[field])
        else:
            return f"{sentence!r}: the plan prints no {field}"
    match = re.search(pattern, _flat(page))
    if match is None:
        return f"not on the page with the code's figures: {sentence.format_map(named)!r}"
    for field, quoted in zip(approximate, match.groups(), strict=True):
        printed = named[field]
        if abs(_seconds(quoted) - _seconds(printed)) > WALL_TOLERANCE * _seconds(printed):
            return f"{sentence!r}: the page says {quoted}, the code prints {printed}"
    return None


@pytest.mark.parametrize(("page", "plan", "sentence"), QUOTED, ids=lambda value: str(value)[:48])
def test_the_guide_quotes_the_plans_figures(
    page: str, plan: str, sentence: str, planned: Callable[[str], docs_figures.Figures]
) -> None:
    problem = _reads((ROOT / page).read_text(), sentence, planned(plan))
    assert problem is None, f"{page}, {docs_figures.PLANS[plan].what}: {problem}"


def test_a_dry_runs_output_reads_as_its_figures() -> None:
    output = """Job stats:
job              count
-------------  -------
hfta_point           9
all                  1
total               10

gpurepro: ddp: GPU counts [2, 4, 8] of profile h100 left out: 1 GPU(s) selected here
gpurepro: 1015 jobs planned, about 9 h 53 min with 16 cores; from the studies' models (no earlier ...).
gpurepro: measurements: inference 432 jobs 5 h 23 min, reference 1 job 2 s (about 2 h 05 min of cool-down waits, estimated).
gpurepro: 4 GPUs side by side, 2 h 36 min to 2 h 38 min of jobs each (claim groups packed onto them: placement.json); jobs that take every core run one at a time with nothing beside them, 4 h 05 min in all (hfta_point), while the other GPUs wait.
"""  # noqa: E501
    found = docs_figures.parse(output)
    assert (found.jobs, found.wall, found.cooldown) == (1015, "9 h 53 min", "2 h 05 min")
    assert found.studies == {"inference": (432, "5 h 23 min"), "reference": (1, "2 s")}
    assert found.rules == {"hfta_point": 9, "all": 1}
    assert (found.gpus_each, found.every_core, found.worst) == (
        "2 h 36 min to 2 h 38 min",
        "4 h 05 min",
        None,
    )
    assert found.as_text()["jobs"] == "1,015" and found.lines[0].startswith("gpurepro: 1015 jobs planned")
    page = "the full plan prints about 9 h\n52 min on one H100"
    assert _reads(page, "full plan prints about {wall} on one H100", found) is None
    assert "the code prints 9 h 53 min" in str(
        _reads("prints about 8 h 00 min on", "prints about {wall} on", found)
    )
    assert "not on the page" in str(_reads("432 jobs", "{inference_jobs} jobs and {reference_jobs}", found))


def test_every_plan_the_guide_quotes_is_checked() -> None:
    assert {plan for _, plan, _ in QUOTED} == set(docs_figures.PLANS) and all(
        (ROOT / page).exists() for page, _, _ in QUOTED
    )


def test_the_module_lists_its_plans(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        docs_figures.main(["no_such_plan", "--workflow", str(tmp_path)])
    assert "no such plan: no_such_plan" in capsys.readouterr().err
