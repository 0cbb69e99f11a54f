"""Do runs of one GPU model read the same headlines? Each run's tables judged again by this checkout's
claims and verdict, and each paper's headline printed side by side.

A verdict that reads "reproduced" on one machine and "too few claims testable" on another of the same
model has judged the host, not the paper. This re-reads runs (results folders of one device, or archives
from `gpurepro pack`) as `gpurepro verdict` and `gpurepro compare` do (verdict/rejudge.py: the run's
tables and provenance, this checkout's claims), so runs made with older code are read by today's rules,
and prints per paper each run's headline and whether they agree; the exit status is 1 where any paper's
headlines differ.

    python benchmarks/headlines.py reference-runs/*.tar.gz results/h200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from gpurepro.compare.pack import is_archive, unpack
from gpurepro.verdict.rejudge import judge_run, papers_of


def run_folder(path: Path, scratch: Path) -> Path:
    """The device folder of a run: the folder itself, or the one an archive holds, unpacked."""
    return unpack(path, scratch / path.name.removesuffix(".tar.gz")) if is_archive(path) else path


def judged_again(folder: Path) -> dict[str, str]:
    """Paper -> headline, the run's tables judged by this checkout's claims."""
    return papers_of(judge_run(folder))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="results/<device> folders or packed archives")
    args = parser.parse_args()
    read: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="gpurepro-headlines-") as scratch:
        for path in args.runs:
            folder = run_folder(path, Path(scratch))
            read[str(path)] = judged_again(folder)
    papers = list(dict.fromkeys(paper for found in read.values() for paper in found))
    differing = 0
    for paper in papers:
        lines = {run: found.get(paper, "(not judged)") for run, found in read.items()}
        same = len(set(lines.values())) == 1
        differing += not same
        print(f"{paper}: {'the same on every run' if same else 'DIFFERS'}")
        for run, headline in lines.items():
            print(f"  {headline}    ({run})")
    print(f"{len(papers) - differing} of {len(papers)} papers read the same headline on all {len(read)} runs")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
