"""benchmarks/placement_pair.py off the GPU: what it reads from the estimate, from compare and from the
verdicts' per-paper tables (the reference runs' own pages)."""

from __future__ import annotations

import tarfile
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from gpurepro.verdict import sides

from .conftest import ROOT, benchmark_script, run_gpurepro

PAIR = ("one", "placed")  # the same-host pair's runs, reference-runs/h200x4-pair-<run>-quick-2026-11-28


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


def _unpacked(name: str, into: Path) -> Path:
    """The device folder of a shipped reference run, unpacked under `into`."""
    with tarfile.open(ROOT / "reference-runs" / f"{name}.tar.gz") as packed:
        packed.extractall(into / name, filter="data")
    (page,) = (into / name).rglob("verdict.md")
    return page.parent


def test_the_same_host_pair_differs_in_one_headline_from_one_slow_process(pair, tmp_path: Path) -> None:  # noqa: ANN001
    """The quick plan on one GPU and placed on four, back to back on one host: every paper's headline
    alike but HFTA's, where one process of the serial baseline (a host-paced point, which ran with
    nothing beside it) read about 0.6x its fellows and left the speedup over serial inconclusive."""
    one, placed = (_unpacked(f"h200x4-pair-{name}-quick-2026-11-28", tmp_path) for name in PAIR)
    a, b = (pair.headlines((folder / "verdict.md").read_text()) for folder in (one, placed))
    assert len(a) == len(b) == 5
    assert {paper for paper in a if a[paper] != b[paper]} == {"HFTA (Wang et al., MLSys'21)"}
    assert a["HFTA (Wang et al., MLSys'21)"].startswith("reproduced")
    table = pd.read_csv(placed / "tables" / "hfta_processes.csv", dtype={"device": str})
    serial = table[(table["mode"] == "serial") & (table["statistic"] == "median")].iloc[0]
    values = sorted(float(v) for v in serial["process_values"].split(","))
    assert len(values) == 4 and values[0] / values[1] < 0.65 and values[-1] / values[1] < 1.1
    # every serial process, the slow one too, measured with nothing beside it (its sidecars' times)
    jobs = sides.jobs_of(placed)
    serial_jobs = [job for job in jobs if "/serial_" in job.name]
    assert len(serial_jobs) == 4
    assert not [(a.name, b.name) for a in serial_jobs for b in jobs if a is not b and a.overlaps(b)]


def test_compare_reads_the_same_host_pair_the_same_within_noise(tmp_path: Path) -> None:
    """gpurepro compare of the pair's archives: at least 97% of the graded metrics show no change beyond
    noise (the issue's bar for placement: the same within noise, or unresolved at this spread where one
    run's processes cannot tell), and none is a change."""
    archives = [ROOT / "reference-runs" / f"h200x4-pair-{n}-quick-2026-11-28.tar.gz" for n in PAIR]
    result = run_gpurepro("compare", *map(str, archives), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr[-2000:]
    counts = benchmark_script("placement_pair").compare_counts(result.stdout + result.stderr)
    graded = sum(count for grade, count in counts.items() if grade != "not comparable")
    unchanged = counts["same within noise"] + counts.get("unresolved at this spread", 0)
    assert unchanged / graded >= 0.97, counts
    changed = pd.read_csv(tmp_path / "out" / "compare.csv")
    changed = changed[
        ~changed["grade"].isin(["same within noise", "unresolved at this spread", "not comparable"])
    ]
    assert changed.empty, changed[["point", "metric", "grade"]]
