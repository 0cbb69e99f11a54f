"""benchmarks/placement_pair.py off the GPU: what it reads from the estimate, from compare and from the
verdicts' per-paper tables (the reference runs' own pages)."""

from __future__ import annotations

import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import ROOT, benchmark_script


@pytest.fixture(scope="module")
def pair() -> ModuleType:
    return benchmark_script("placement_pair")


def test_the_estimate_and_compares_counts_are_read(pair: ModuleType) -> None:
    printed = "gpurepro: 63 jobs planned, about 10 min 25 s with 64 cores; from the studies' models."
    assert pair.estimate_s(printed) == 625
    cluster = "gpurepro: 1017 jobs planned, about 1 h 04 min of wall time on the cluster with 16 SLURM jobs"
    assert pair.estimate_s(cluster) == 3840 and pair.estimate_s("nothing") is None
    said = (
        "compare a -> b: 278 same within noise, 17 higher, 14 not comparable, 5 lower, 3 slower "
        "(2 of the 25 changes at host-bound points); wrote b/compare.md"
    )
    assert pair.compare_counts(said) == {
        "same within noise": 278, "higher": 17, "not comparable": 14, "lower": 5, "slower": 3,
    }  # fmt: skip


def test_the_headlines_of_the_one_gpu_and_the_placed_reference_runs_are_alike(
    pair,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    pages = {}
    for name in ("h200-quick-2026-11-28", "h200x4-placed-quick-2026-11-28"):
        with tarfile.open(ROOT / "reference-runs" / f"{name}.tar.gz") as packed:
            packed.extractall(tmp_path / name, filter="data")
        (page,) = (tmp_path / name).rglob("verdict.md")
        pages[name] = pair.headlines(page.read_text())
    one, placed = pages.values()
    assert len(one) == len(placed) == 5
    assert one["HFTA (Wang et al., MLSys'21)"].startswith("too few claims testable here (1 of 3")
    # the seed project's counts differ (four GPUs make one more claim testable), its headline does not
    assert one == placed
    assert placed["Power Variability on GPUs (the seed project)"].startswith("too few claims testable")
