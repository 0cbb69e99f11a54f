"""The registry of what is measured (gpurepro/registry.py): every rule that writes raw files has a record,
and what the records say agrees with the tables, claims and figures that read them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpurepro import registry
from gpurepro.commands import aggregate, plot
from gpurepro.more_processes.points import selections
from gpurepro.verdict.claims import claim_files
from gpurepro.verdict.loading import load_claims

from .conftest import ROOT, copy_workflow, run_snakemake

# Appended to a copy of the Snakefile: each rule's outputs that are raw files (write-protected, or under
# a raw/ folder), written where the test reads them once the workflow is parsed.
RAW_OUTPUTS_DUMP = """
import json as _json
from snakemake.io import is_flagged as _is_flagged

_json.dump(
    {
        _rule.name: [
            str(_out) for _out in _rule.output if _is_flagged(_out, "protected") or "/raw/" in str(_out)
        ]
        for _rule in workflow.rules
    },
    open("raw_outputs.json", "w"),
)
"""
# The plans that between them define every rule: the cpu profile, one GPU (variability per GPU) and
# two GPUs (the variability node job).
PLANS = {
    "cpu": ["device=cpu"],
    "one_gpu": ["device=h100"],
    "two_gpus": ["device=h100", "gpus=[0,1]"],
}


@pytest.fixture(scope="module")
def raw_writers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Plan -> the rules of its workflow that write raw files."""
    found = {}
    for name, settings in PLANS.items():
        folder = copy_workflow(tmp_path_factory.mktemp(name))
        with (folder / "Snakefile").open("a") as snakefile:
            snakefile.write(RAW_OUTPUTS_DUMP)
        results = folder / "results"
        done = run_snakemake("--list-rules", "--config", f"results_dir={results}", *settings, cwd=folder)
        assert done.returncode == 0, done.stderr
        outputs = json.loads((folder / "raw_outputs.json").read_text())
        found[name] = {rule for rule, paths in outputs.items() if paths}
    return found


def test_every_rule_that_writes_raw_files_is_registered(raw_writers: dict[str, set[str]]) -> None:
    writers = set().union(*raw_writers.values())
    assert writers, "no rule of the workflow writes raw files: the dump read nothing"
    assert writers - set(registry.BY_RULE) == set()
    # and no record names a rule the workflow lacks
    assert set(registry.BY_RULE) - writers == set()


def test_one_record_per_rule_and_one_name_per_study() -> None:
    assert len(registry.BY_RULE) == len(registry.RECORDS)
    studies = {record.study for record in registry.RECORDS}
    assert "ddp" in studies and not studies & {"train", "training", "train_ddp"}


def test_every_study_with_tables_is_aggregated_and_every_figure_drawn() -> None:
    for record in registry.RECORDS:
        if record.study in aggregate.AGGREGATORS:
            assert record.study in aggregate.WITH_SIDECARS
        if record.figure is not None:
            assert record.figure in plot.PLOTTERS


def test_the_claims_of_a_record_are_those_that_read_its_tables() -> None:
    """A record names the claim files whose claims read its tables, as the claims' own selections (the
    claim-to-point mapping of more_processes.points) name them, or on a campaign its measure."""
    expected = ROOT / "config" / "expected"
    tables_read: dict[str, set[str]] = {}
    for file in claim_files([expected]):
        for claim in load_claims([file]):
            read = {selection.table for selection in selections(claim)}
            if claim.campaign is not None:
                read.add(claim.campaign.measure.table)
            tables_read.setdefault(Path(file).stem, set()).update(read)
    for record in registry.RECORDS:
        reading = {stem for stem, tables in tables_read.items() if tables & set(record.tables)}
        assert set(record.claims) == reading, record.rule


def test_kinds_of_points_by_wildcards() -> None:
    deit = registry.BY_RULE["infer_deit"]
    assert deit.point_kind({"mode": "eager", "batch": "1"}) == "inference_host_paced"
    assert deit.point_kind({"mode": "cudagraph", "batch": "1"}) == "inference_gpu_bound"
    assert registry.BY_RULE["reference_run"].point_kind({}) == "sgemm"
    assert registry.BY_RULE["train_ddp"].point_kind({}) is None
    assert registry.KINDS == (
        "sgemm", "inference_host_paced", "inference_gpu_bound", "hfta_host_paced", "hfta_gpu_bound",
    )  # fmt: skip


def test_placed_records_name_their_group_wildcards_among_their_axes() -> None:
    for record in registry.PLACED.values():
        assert set(record.group_wildcards) <= set(record.axes)
        if record.pace is not None:
            assert set(record.pace.wildcards) <= set(record.axes)


def test_each_family_with_rounds_names_its_measuring_rule_and_round_tables_rule() -> None:
    """common.smk finds a family's raw files and round tables through these, not by its name."""
    assert registry.with_rounds("hfta").rule == "hfta_point"
    assert registry.with_rounds("deit").round_tables == registry.with_rounds("bert").round_tables
    assert {registry.with_rounds(f).round_tables for f in ("hfta", "deit")} == {
        "hfta_round_tables",
        "inference_round_tables",
    }
    with pytest.raises(KeyError, match="sgemm: no family of points with rounds"):
        registry.with_rounds("sgemm")
