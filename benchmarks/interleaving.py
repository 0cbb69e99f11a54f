"""Does interleaving a ratio's two sides in time steady it from run to run? HFTA's fused array over serial
training, measured in runs of fresh processes, each run either interleaved or blocked.

A claim's ratio (fused B=32 over serial B=1) divides a GPU-bound figure by a host-paced one: serial B=1
moves 1.4x between processes as the host's pace drifts, while the fused array holds within 0.2%. Where
the two sides run far apart in time a slow spell of the host falls on one side only; interleaved, it
falls on both. Each run here measures `--processes` processes a side as the pipeline does (a fresh
`gpurepro hfta` process each, real raw files):

- interleaved: the sides alternate, each pair's order drawn from a seeded generator (AB or BA);
- blocked: every process of one side, then every process of the other (which side first, seeded).

The runs of the two schemes alternate too, so a drift over the benchmark falls on both schemes. For each
scheme it prints every run's ratio (median over its processes, side by side) and the run-to-run spread
of the ratio: its geometric SD and max/min. A smaller spread interleaved says a run's interval over its
own processes comes nearer what the next run would read.

    python benchmarks/interleaving.py --gpu 0 --runs 3 --processes 2 --out interleaving.csv
    python benchmarks/interleaving.py --summarise benchmarks/measured/interleaving-h200-2026-11-29.csv
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gpurepro.results import read_raw


@dataclass(frozen=True)
class Side:
    """One side of the ratio: an HFTA point, as the quick plan measures it."""

    name: str
    mode: str
    b: int


SERIAL = Side("serial B=1", "serial", 1)
FUSED = Side("fused B=32", "hfta", 32)
SCHEMES = ("interleaved", "blocked")
# Waits that change no figure of a throughput ratio are shortened: the ratio reads no energy or idle power
SHORT_WAITS = ["--idle-seconds", "0.5", "--cooldown-max-wait-s", "0", "--energy-window-s", "1"]


def order(scheme: str, processes: int, rng: random.Random) -> list[Side]:
    """The processes of one run, in the order they start."""
    if scheme == "blocked":
        first, second = (SERIAL, FUSED) if rng.random() < 0.5 else (FUSED, SERIAL)
        return [first] * processes + [second] * processes
    pairs = [(SERIAL, FUSED) if rng.random() < 0.5 else (FUSED, SERIAL) for _ in range(processes)]
    return [side for pair in pairs for side in pair]


def measure(side: Side, gpu: int, out: Path, precision: str, min_timed_s: float) -> float:
    """Samples/s of one fresh `gpurepro hfta` process (the sum over the point's rows: its models)."""
    command = [
        sys.executable, "-m", "gpurepro", "hfta", "--workload", "resnet18", "--mode", side.mode,
        "-B", str(side.b), "--precision", precision, "--gpu", str(gpu), "--min-timed-s", str(min_timed_s),
        *SHORT_WAITS, "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{side.name}: gpurepro hfta failed:\n{done.stderr[-2000:]}")
    rows = read_raw(out)
    return float(rows["throughput_samples_per_s"].sum())


def spread(ratios: list[float]) -> tuple[float, float]:
    """Geometric SD and max/min of a list of ratios."""
    logs = [math.log(r) for r in ratios]
    gsd = math.exp(statistics.stdev(logs)) if len(logs) > 1 else math.nan
    return gsd, max(ratios) / min(ratios)


def complete_runs(table: pd.DataFrame, scheme: str, processes: int) -> list[int]:
    """The runs of a scheme that measured every process of both sides (a run cut short by a time limit
    would compare unequal sides, so it is left out and said so)."""
    rows = table[table["scheme"] == scheme]
    counts = pd.crosstab(rows["run"], rows["side"]).reindex(columns=[SERIAL.name, FUSED.name], fill_value=0)
    return sorted(int(run) for run, row in counts.iterrows() if row.min() >= processes)


def summarise(table: pd.DataFrame, processes: int, precision: str) -> list[str]:
    """Each scheme's per-run ratios (median over a run's processes, side by side) and their spread."""
    lines = [f"fused B=32 over serial B=1, {precision}, {processes} processes a side per run"]
    for scheme in SCHEMES:
        runs = complete_runs(table, scheme, processes)
        cut = sorted(set(table.loc[table["scheme"] == scheme, "run"]) - set(runs))
        medians = table[table["scheme"] == scheme].groupby(["run", "side"])["samples_per_s"].median()
        ratios = [medians[(run, FUSED.name)] / medians[(run, SERIAL.name)] for run in runs]
        if not ratios:
            lines.append(f"{scheme:11s}: no complete run")
            continue
        gsd, max_over_min = spread(ratios)
        listed = ", ".join(f"{r:.2f}" for r in ratios)
        left_out = f" (run {', '.join(map(str, cut))} incomplete, left out)" if cut else ""
        lines.append(f"{scheme:11s}: runs {listed}x; run-to-run GSD {gsd:.3f}, max/min {max_over_min:.3f}"
                     f"{left_out}")  # fmt: skip
    serial = table[table["side"] == SERIAL.name]["samples_per_s"]
    fused = table[table["side"] == FUSED.name]["samples_per_s"]
    lines.append(f"serial B=1 processes: {serial.min():,.0f} to {serial.max():,.0f} samples/s; "
                 f"fused B=32: {fused.min():,.0f} to {fused.max():,.0f}")  # fmt: skip
    return lines


def measure_runs(args: argparse.Namespace) -> pd.DataFrame:
    """Every process of every run, each row appended to --out as soon as it is measured, so a run the
    caller's time limit cuts short still leaves the processes it finished."""
    rng = random.Random(args.seed)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="gpurepro-interleaving-") as scratch:
        for run in range(1, args.runs + 1):
            for scheme in SCHEMES if run % 2 else reversed(SCHEMES):
                for position, side in enumerate(order(scheme, args.processes, rng)):
                    out = Path(scratch, f"{scheme}_run{run}_{position}_{side.mode}.csv")
                    value = measure(side, args.gpu, out, args.precision, args.min_timed_s)
                    row = {"scheme": scheme, "run": run, "position": position, "side": side.name,
                           "samples_per_s": value}  # fmt: skip
                    rows.append(row)
                    if args.out:
                        pd.DataFrame([row]).to_csv(args.out, mode="a", index=False,
                                                   header=not args.out.exists())  # fmt: skip
                    print(f"{scheme:11s} run {run} #{position}: {side.name:10s} {value:12,.0f} samples/s",
                          flush=True)  # fmt: skip
    return pd.DataFrame(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3, help="runs of each scheme")
    parser.add_argument("--processes", type=int, default=2, help="processes of each side in a run")
    parser.add_argument("--precision", default="fp16")
    parser.add_argument("--min-timed-s", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="CSV: one row per process, appended as each ends")
    parser.add_argument("--summarise", type=Path, metavar="CSV",
                        help="measure nothing: print the summary of an earlier run's CSV")  # fmt: skip
    args = parser.parse_args()
    if args.summarise:
        table = pd.read_csv(args.summarise)
    else:
        if args.out and args.out.exists():
            raise SystemExit(f"--out {args.out}: the file exists; name a new one (rows are appended)")
        table = measure_runs(args)
    print("\n" + "\n".join(summarise(table, args.processes, args.precision)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
