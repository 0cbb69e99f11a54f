"""The same plan measured on one GPU and placed by claim groups on every GPU, back to back on one host.

`placement: claim_groups` is to become the default only where it changes no reading: this runs the plan
twice into two new results folders, with `placement=one_gpu` and with `placement=claim_groups` (the
order alternated by `--placed-first`, since a fresh machine's first run is the slower), each after a
dry-run that prints its estimate; then `gpurepro compare` of the two and the verdicts' per-paper
headlines side by side. It prints, and writes as JSON with `--out`:

- each run's wall time against its printed estimate;
- compare's counts (same within noise, changed, not comparable) and the share of graded metrics that
  are the same;
- each paper whose headline differs between the two.

    python benchmarks/placement_pair.py --cores 64 --config quick=true --prefix results-pair

Extra `--config` items (quick=true, host_to_itself=[]) go to both runs. Needs two or more GPUs.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from gpurepro.runs import verdict_headlines

PLACEMENTS = {"one": "one_gpu", "placed": "claim_groups"}
UNITS = {"h": 3600, "min": 60, "s": 1}


def seconds_of(printed: str) -> float:
    """'2 h 36 min', '10 min 25 s' or '45 s' in seconds."""
    return float(sum(int(value) * UNITS[unit] for value, unit in re.findall(r"(\d+) (h|min|s)\b", printed)))


def estimate_s(output: str) -> float | None:
    """The wall time a dry-run printed ('gpurepro: 63 jobs planned, about 10 min 25 s with 64 cores')."""
    found = re.search(r"jobs planned, about (.+?) (?:with|of wall time)", output)
    return seconds_of(found.group(1)) if found else None


def compare_counts(output: str) -> dict[str, int]:
    """compare's counts by grade, from its closing line ('... : 278 same within noise, 17 higher, ...')."""
    line = next((text for text in output.splitlines() if text.startswith("compare ")), "")
    summary = line.split(": ", 1)[-1].split(" (")[0].split("; wrote")[0]
    return {grade: int(count) for count, grade in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", summary)}


def headlines(verdict_md: str) -> dict[str, str]:
    """Each paper's verdict from a verdict page's per-paper table."""
    return dict(verdict_headlines.headlines(verdict_md))


def snakemake(args: argparse.Namespace, folder: str, placement: str, dry: bool) -> tuple[int, str, float]:
    """One snakemake call into `folder`: (exit status, its output, seconds it took)."""
    command = ["snakemake", "--cores", str(args.cores)] + (["-n"] if dry else [])
    command += ["--config", f"results_dir={folder}", f"placement={placement}", *args.config]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def device_folder(results: Path) -> Path:
    """The one device folder a results folder holds (results-pair-one/h100)."""
    found = [path for path in results.iterdir() if (path / "verdict.md").is_file()]
    if len(found) != 1:
        sys.exit(f"{results}: expected one device folder with a verdict, found {len(found)}")
    return found[0]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, required=True)
    parser.add_argument(
        "--prefix", default="results-pair", help="results folders <prefix>-one, <prefix>-placed"
    )
    parser.add_argument("--placed-first", action="store_true", help="run the placed plan first")
    parser.add_argument("--config", nargs="*", default=[], help="more config for both runs, e.g. quick=true")
    parser.add_argument("--out", type=Path, help="the summary as JSON")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    order = ["placed", "one"] if args.placed_first else ["one", "placed"]
    summary: dict[str, object] = {"order": order}
    for name in order:
        folder = f"{args.prefix}-{name}"
        if Path(folder).exists():
            sys.exit(f"{folder} exists: measure into new folders (--prefix)")
        _, planned, _ = snakemake(args, folder, PLACEMENTS[name], dry=True)
        status, output, wall = snakemake(args, folder, PLACEMENTS[name], dry=False)
        Path(f"{folder}.log").write_text(output)
        summary[name] = {"exit": status, "wall_s": round(wall), "estimate_s": estimate_s(planned)}
        print(
            f"{name}: exit {status}, {wall / 60:.1f} min, estimate {summary[name]['estimate_s']} s",
            flush=True,
        )
        if status:
            sys.exit(f"the {name} run failed: see {folder}.log")
    one, placed = (device_folder(Path(f"{args.prefix}-{name}")) for name in ("one", "placed"))
    compared = subprocess.run(
        ["gpurepro", "compare", str(one), str(placed), "--out", f"{args.prefix}-compare"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    counts = compare_counts(compared.stdout + compared.stderr)
    graded = sum(count for grade, count in counts.items() if grade != "not comparable")
    same = counts.get("same within noise", 0)
    summary["compare"] = {**counts, "same_share_of_graded": round(same / graded, 4) if graded else None}
    a, b = (headlines((path / "verdict.md").read_text()) for path in (one, placed))
    summary["headlines_differ"] = {
        paper: [a.get(paper), b.get(paper)] for paper in a | b if a.get(paper) != b.get(paper)
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
