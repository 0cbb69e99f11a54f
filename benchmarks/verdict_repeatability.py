"""How often a rerun on the same host would read the inference claims as this run did: each point's
processes drawn again with replacement from the run's own, the across-process table remade from them and
the claims judged again, many times over.

A verdict that flips between two back-to-back runs is one whose claims sit near an edge at the number of
processes the run measured. This puts a number on it per claim, from one run's processes: the share of
redrawn runs that read each result. `--processes N` draws N processes a point instead of as many as the
run had, to ask how many a claim needs to read the same most of the time. A redraw from three processes
knows only those three values, so it tells how much the reading leans on the run's particular processes,
not the host's whole spread; read it beside two real runs (docs/verdict.md).

    python benchmarks/verdict_repeatability.py results/h100 results-run2/h100 --resamples 400
    python benchmarks/verdict_repeatability.py results/h100 --processes 5
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import numpy as np
import pandas as pd

from gpurepro import process_table
from gpurepro.hardware import load_hardware
from gpurepro.inference.summary import PROCESS_KEYS
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.statuses import GRADE_OF

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("inference_deit", "inference_bert")
CLAIMS = ("deit-power-order", "bert-power-order", "deit-b-minus-deit-t-power")


def redraw(table: pd.DataFrame, rng: np.random.Generator, processes: int | None) -> pd.DataFrame:
    """The study table with each point's processes drawn again with replacement (as many as it had, or
    `processes`), numbered 1, 2, ... in the order drawn; failed processes are left out."""
    ok = table[table["status"].astype(str) == "ok"]
    keys = [key for key in PROCESS_KEYS if key in ok]
    parts = []
    for _, point in ok.groupby(keys, dropna=False, sort=False):
        runs = sorted(point["run"].unique())
        drawn = rng.choice(runs, size=processes or len(runs), replace=True)
        for new_run, run in enumerate(drawn, start=1):
            parts.append(point[point["run"] == run].assign(run=new_run))
    return pd.concat(parts, ignore_index=True)


def tables_of(study: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The study tables with their across-process tables, as the verdict reads them."""
    keys = list(PROCESS_KEYS)
    return {
        **study,
        **{f"{name}_processes": process_table.summarise(table, keys) for name, table in study.items()},
    }


def _share(fraction: float) -> str:
    return f"{fraction:.0%}" if fraction >= 0.01 else "<1%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="a device's results folder (results/h100)")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--processes", type=int, help="processes a point in each redraw (default: the run's)")
    parser.add_argument("--claims", nargs="+", default=list(CLAIMS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    hardware = load_hardware(ROOT / "config" / "hardware")
    shipped = load_claims([ROOT / "config" / "expected"], hardware=hardware)
    claims = [claim for claim in shipped if claim.id in args.claims]
    rng = np.random.default_rng(args.seed)
    drawn = f"{args.processes} processes a point" if args.processes else "the run's processes a point"
    print(f"{args.resamples} redraws of {drawn}; share of redraws reading each result")
    print(f"{'run':<32} {'claim':<28} {'this run':<18} redrawn")
    for folder in args.results:
        paths = {name: Path(folder) / "tables" / f"{name}.csv" for name in FAMILIES}
        study = {name: pd.read_csv(path) for name, path in paths.items() if path.is_file()}
        # each reading's own grade: a claim shown but not counted (an order by size) still reads held or not
        own = {o.claim.id: GRADE_OF[o.result] for o in evaluate(claims, tables_of(study), hardware)}
        counts: dict[str, collections.Counter[str]] = {c.id: collections.Counter() for c in claims}
        for _ in range(args.resamples):
            again = {name: redraw(table, rng, args.processes) for name, table in study.items()}
            for outcome in evaluate(claims, tables_of(again), hardware):
                counts[outcome.claim.id][GRADE_OF[outcome.result]] += 1
        for claim in claims:
            shares = ", ".join(
                f"{grade} {_share(n / args.resamples)}" for grade, n in counts[claim.id].most_common()
            )
            print(f"{folder:<32} {claim.id:<28} {own[claim.id]:<18} {shares}")


if __name__ == "__main__":
    main()
