"""benchmarks/headlines.py over the shipped reference runs: H200 runs of one plan on two hosts (one GPU, and
four GPUs of another host measured one GPU at a time and placed) read the same headline for every paper,
when judged by today's claims."""

from __future__ import annotations

from pathlib import Path

from .conftest import ROOT, benchmark_script

bench = benchmark_script("headlines")


def test_every_shipped_h200_run_reads_the_same_headlines(tmp_path: Path) -> None:
    archives = sorted((ROOT / "reference-runs").glob("h200*.tar.gz"))
    assert len(archives) >= 3
    read = [bench.judged_again(bench.run_folder(path, tmp_path)) for path in archives]
    assert len(read[0]) == 5  # the five papers
    assert all(found == read[0] for found in read[1:]), read
