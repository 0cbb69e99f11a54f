"""Errors, not tracebacks: every bad input to the workflow or the CLI ends in one message that names the
key, value or file and what is allowed, with a non-zero exit and no Python traceback after it. Each case
runs for real: Snakemake as dry-runs of a copy of the workflow, the CLI as a process."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gpurepro.cli import main
from gpurepro.schema import first_error

from .conftest import ROOT, run_gpurepro, run_snakemake
from .test_compare import make_run

GPUS_ALLOWED = "allowed forms: 'all', or a list of distinct GPU indices, e.g. [0, 2]"


def _failed_plainly(result: subprocess.CompletedProcess[str], message: str) -> None:
    """Non-zero, the message once, and no traceback anywhere in the output."""
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-2000:]
    assert output.count(message) == 1, output[-2000:]
    assert "Traceback" not in output, output[-2000:]


def _dry_run(workflow: Path, *config: str, target: str = "all") -> subprocess.CompletedProcess[str]:
    return run_snakemake(target, "-n", "--cores", "1", "--config", "device=cpu", *config, cwd=workflow)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("gpus=7", f"bad config: key gpus: 7 is not any of the {GPUS_ALLOWED}"),
        (
            "gpus=abc",
            "bad config: key gpus: 'abc' is not one of ['all']; allowed: 'all', or a list of distinct",
        ),
        ("gpus=[0,0]", "bad config: key gpus: [0, 0] has non-unique elements; allowed: 'all', or a list"),
        ("quick=maybe", "bad config: key quick: 'maybe' is not of type 'boolean'; allowed: true or false"),
        (
            "seed=abc",
            "bad config: key seed: 'abc' is not of type 'integer'; allowed: an integer of 0 or more",
        ),
        (
            "telemetry={rate_hz: -1}",
            "bad config: key telemetry.rate_hz: -1 is less than or equal to the minimum of 0",
        ),
        (
            "results_dir=",
            "bad config: key results_dir: None is not of type 'string'; allowed: a non-empty string",
        ),
        (
            "data={loader: {workers: many}}",
            "bad config: key data.loader.workers: 'many' is not one of ['auto']; allowed: 'auto', or an "
            "integer of 0 or more",
        ),
        (
            "more_processes={extra: -1}",
            "bad config: key more_processes.extra: -1 is less than the minimum of 0",
        ),
        (
            "data={source: imagenet}",
            "bad config: key data.source: imagenet: ImageNet needs the official ILSVRC2012 archives",
        ),
    ],
)
def test_bad_config_is_one_line_at_start(override: str, message: str, workflow_copy: Path) -> None:
    _failed_plainly(_dry_run(workflow_copy, override), message)


def test_null_in_a_nested_config_value_is_null(workflow_copy: Path) -> None:
    """`more_processes={extra: null}` is the schema's own "no cap": Snakemake's loader leaves it a string."""
    result = _dry_run(workflow_copy, "more_processes={extra: null}")
    assert result.returncode == 0, result.stderr[-2000:]


def test_compare_with_a_missing_folder_stops_at_start(tmp_path: Path, workflow_copy: Path) -> None:
    missing = tmp_path / "lastmonth"
    message = f"bad config: key compare_with: {missing}: no such folder or file; allowed: a results folder"
    result = _dry_run(workflow_copy, f"compare_with={missing}", target="compare")
    _failed_plainly(result, message)
    assert "nothing to run" not in result.stdout + result.stderr  # no plan follows the error


def test_compare_without_compare_with_says_how_to_set_it(workflow_copy: Path) -> None:
    message = "gpurepro: rule compare: config compare_with is empty. Name the run to compare this one with"
    _failed_plainly(_dry_run(workflow_copy, target="compare"), message)


def test_build_kernels_on_the_cpu_profile_says_it_needs_a_gpu_profile(workflow_copy: Path) -> None:
    message = "gpurepro: build_kernels needs a GPU profile; profile cpu has no cuda_arch"
    result = _dry_run(workflow_copy, target="build_kernels")
    _failed_plainly(result, message)
    assert "ARCH=None" not in result.stdout + result.stderr


def _packed_run(tmp_path: Path) -> Path:
    archive = tmp_path / "packed" / "lastmonth.tar.gz"
    assert main(["pack", str(make_run(tmp_path / "results-lastmonth")), "--out", str(archive)]) == 0
    return archive


def test_compare_takes_a_packed_run_as_gpurepro_compare_does(tmp_path: Path, workflow_copy: Path) -> None:
    archive = _packed_run(tmp_path)
    planned = _dry_run(workflow_copy, f"compare_with={archive}", target="compare")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "results/compare/lastmonth_vs_cpu/compare.md" in planned.stdout
    assert f"gpurepro compare {archive} results/cpu" in planned.stdout

    Path(f"{archive}.sha256").write_text(f"{'0' * 64}  {archive.name}\n")
    message = f"bad config: key compare_with: {archive}: checksum"
    _failed_plainly(_dry_run(workflow_copy, f"compare_with={archive}", target="compare"), message)


def _table(tmp_path: Path, text: str = "a,b\n1,2\n") -> Path:
    path = tmp_path / "table.csv"
    path.write_text(text)
    return path


# Each CLI case: its arguments (made in tmp_path) and the message it must end in. `absent` never exists.
CLI_CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "verdict --tables": (
        lambda t: ["verdict", "--profile", "cpu", "--tables", str(t / "absent.csv")],
        "gpurepro verdict: error: argument --tables: no such file: {t}/absent.csv",
    ),
    "verdict --tables folder": (
        lambda t: ["verdict", "--profile", "cpu", "--tables", str(t)],
        "gpurepro verdict: error: argument --tables: not a file: {t} is a folder",
    ),
    "verdict --tables empty": (
        lambda t: ["verdict", "--profile", "cpu", "--tables", str(_table(t, ""))],
        "gpurepro verdict: error: argument --tables: {t}/table.csv is not a CSV table: No columns to parse",
    ),
    "verdict --results": (
        lambda t: ["verdict", "--profile", "cpu", "--results", str(t / "absent")],
        "gpurepro verdict: error: argument --results: no such folder: {t}/absent",
    ),
    "compare": (
        lambda t: ["compare", str(t / "absent.tar.gz"), str(t)],
        "gpurepro compare: error: argument a: no such file or folder: {t}/absent.tar.gz",
    ),
    "pack": (
        lambda t: ["pack", str(t / "absent"), "--out", str(t / "run.tar.gz")],
        "gpurepro pack: error: argument results: no such folder: {t}/absent",
    ),
    "aggregate": (
        lambda t: ["aggregate", "sgemm", str(t / "absent.csv"), "--out", str(t / "out.csv")],
        "gpurepro aggregate: error: argument raw: no such file: {t}/absent.csv",
    ),
    "aggregate sidecar": (
        lambda t: ["aggregate", "sgemm", str(_table(t)), "--out", str(t / "out.csv")],
        "gpurepro aggregate: error: argument raw (the provenance sidecar of {t}/table.csv): no such file: "
        "{t}/table.provenance.json",
    ),
    "plot": (
        lambda t: ["plot", "sgemm", str(t / "absent.csv"), "--out", str(t / "out.png")],
        "gpurepro plot: error: argument table: no such file: {t}/absent.csv",
    ),
    "plot --reference": (
        lambda t: ["plot", "ddp", str(_table(t)), "--reference", str(t / "absent.csv"), "--out", "x.png"],
        "gpurepro plot: error: argument --reference: no such file: {t}/absent.csv",
    ),
    "campaign compare": (
        lambda t: ["campaign", "compare", str(t / "absent.csv"), str(t / "b.csv"), "--out", str(t)],
        "gpurepro campaign: error: argument a: no such file: {t}/absent.csv",
    ),
    "more-processes": (
        lambda t: (
            ["more-processes", "--study", "hfta", "--tables", str(t / "absent.csv"), "--per-point", "3"]
            + ["--out", str(t / "plan.json")]
        ),
        "gpurepro more-processes: error: argument --tables: no such file: {t}/absent.csv",
    ),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_a_missing_or_bad_input_file_is_named(case: str, tmp_path: Path) -> None:
    arguments, message = CLI_CASES[case]
    result = run_gpurepro(*arguments(tmp_path), cwd=tmp_path)
    _failed_plainly(result, message.format(t=tmp_path))
    assert result.returncode == 2  # the CLI's status for an error the user can fix


def _schema(tmp_path: Path, properties: dict) -> Path:
    path = tmp_path / "schema.yaml"
    path.write_text(yaml.safe_dump({"type": "object", "properties": properties}))
    return path


def test_first_error_says_what_each_alternative_of_a_choice_allows(tmp_path: Path) -> None:
    """oneOf and anyOf alike, whatever the key: a value that fits none is named with every form allowed,
    and the error inside the alternative it came closest to names the others too."""
    schema = _schema(
        tmp_path,
        {
            "size": {"anyOf": [{"type": "integer", "minimum": 1}, {"enum": ["auto"]}]},
            "bound": {"oneOf": [{"required": ["above"]}, {"required": ["below"]}]},
            "names": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        },
    )
    assert first_error({"size": 1.5}, schema) == (
        "key size: 1.5 is not any of the allowed forms: an integer of 1 or more, or 'auto'"
    )
    assert first_error({"size": 0}, schema) == (
        "key size: 0 is less than the minimum of 1; allowed: an integer of 1 or more, or 'auto'"
    )
    assert first_error({"bound": {}}, schema) == (
        "key bound: {} is not any of the allowed forms: a mapping with key 'above', or a mapping with key "
        "'below'"
    )
    assert first_error({"names": ["a", 2]}, schema) == (
        "key names.1: 2 is not of type 'string'; key names allows: a string, or a list (each item a string)"
    )
    assert first_error({"names": ["a"], "size": "auto", "bound": {"above": 1}}, schema) is None


def test_gpus_in_the_config_schema_names_both_forms() -> None:
    config = {**yaml.safe_load((ROOT / "config/config.yaml").read_text()), "device": "cpu", "gpus": 7}
    schema = ROOT / "workflow/schemas/config.schema.yaml"
    assert first_error(config, schema) == f"key gpus: 7 is not any of the {GPUS_ALLOWED}"
