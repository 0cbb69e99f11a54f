"""Where a comparison's outputs go, and the files of run A for the workflow (no plotting imports: the
Snakefile reads this while it parses)."""

from __future__ import annotations

from pathlib import Path

from ..errors import GpureproError
from .pack import SUFFIX, checksum_path, verify


def default_out(a: Path | str, b: Path | str, root: Path | str = "results") -> Path:
    """results/compare/<A>_vs_<B>: the folders' names (e.g. h100_vs_h200)."""
    return Path(root) / "compare" / f"{run_name(a)}_vs_{run_name(b)}"


def run_name(path: Path | str) -> str:
    """A run's name: its folder's, or its archive's without .tar.gz (gpurepro pack)."""
    return Path(path).resolve().name.removesuffix(".tar.gz")


# Folders beside the devices' in a results folder that hold no device's run: the tables combined across
# devices (workflow/rules/report.smk) and earlier comparisons.
NOT_DEVICES = ("combined", "compare")


def device_folder(path: Path | str) -> Path:
    """The results folder of one device that `path` names: `path` itself where it holds tables/ (e.g.
    results/h100), or the one device folder inside it (results holding only results/h100/tables/), as
    the two folders a reviewer has after two runs are `results` and another run's copy of it. Where it
    holds several devices' results, the choice is the user's: fail naming the folders to choose from."""
    path = Path(path)
    if (path / "tables").is_dir():
        return path
    devices = sorted(
        sub
        for sub in (path.iterdir() if path.is_dir() else [])
        if sub.is_dir() and sub.name not in NOT_DEVICES and any((sub / "tables").glob("*.csv"))
    )
    if len(devices) == 1:
        return devices[0]
    if devices:
        raise GpureproError(
            f"{path}: holds the results of {len(devices)} devices; name one of them: "
            + ", ".join(str(device) for device in devices)
        )
    raise GpureproError(
        f"{path}: not a results folder of one device (expected {path / 'tables'}/*.csv, e.g. results/h100) "
        f"nor a results folder holding one (results/<device>/tables/*.csv); a run packed by gpurepro pack "
        f"(run{SUFFIX}) is taken too"
    )


# What `gpurepro compare` and `snakemake compare` take for a run, said where a path is none of them
RUN_FORMS = (
    "a results folder of one device (e.g. results-lastmonth/h100), a results folder holding one, or a run "
    f"packed by gpurepro pack (run{SUFFIX}, its .sha256 beside it)"
)
COMPARE_WITH_UNSET = (
    "rule compare: config compare_with is empty. Name the run to compare this one with: its results "
    "folder or its archive from gpurepro pack, e.g. snakemake compare --cores 1 --config "
    "compare_with=results-lastmonth/h100"
)


def run_files(path: Path | str) -> list[Path]:
    """The files of a run that a comparison reads, as `gpurepro compare` takes the run: an archive of
    gpurepro pack and its checksum (verified here, so a damaged one stops before any job), or the tables
    of the device folder `path` names. An error names `path` and what is allowed."""
    path = Path(path)
    if not path.exists():
        raise GpureproError(f"{path}: no such folder or file; allowed: {RUN_FORMS}")
    if path.is_file() and not path.name.endswith(SUFFIX):
        raise GpureproError(f"{path}: a file, not a folder or a {SUFFIX} archive; allowed: {RUN_FORMS}")
    if path.is_file():
        verify(path)
        return [path, checksum_path(path)]
    tables = sorted((device_folder(path) / "tables").glob("*.csv"))
    if not tables:
        raise GpureproError(f"{path}: no tables/*.csv there; allowed: {RUN_FORMS}")
    return tables


def baseline_files(compare_with: str) -> list[str]:
    """Run A's files for the workflow's compare rule (run_files), or an error saying how to name run A."""
    if not compare_with:
        raise GpureproError(COMPARE_WITH_UNSET)
    return [str(path) for path in run_files(compare_with)]
