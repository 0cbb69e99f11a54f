#!/usr/bin/env python3
"""Every GPU of a host measured alike: `gpurepro reference g` and `gpurepro sgemm N reps g --backend torch`
for each GPU g, one after another, each against GPU 0. On GPUs of one model the ratios sit within a few
percent of 1; a timing taken on another GPU's stream reads orders of magnitude off (or stops at the
plausibility guard).

    python benchmarks/gpu_index_agreement.py                 # every GPU NVML sees
    python benchmarks/gpu_index_agreement.py --gpus 0,1 --n 8192 --reps 10
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from gpurepro import nvml


def gpurepro(*args: str) -> str:
    """Run one `gpurepro` command; its stderr (the log), or stop with it where the command failed."""
    result = subprocess.run([sys.executable, "-m", "gpurepro", *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"gpurepro {' '.join(args)} failed:\n{result.stderr}")
    return result.stderr


def reference_rates(gpu: int, folder: Path) -> dict[str, float]:
    out = folder / f"rates_gpu{gpu}.csv"
    gpurepro("reference", str(gpu), "--device-check", "warn", "--out", str(out))
    rows = pd.read_csv(out)
    return rows.groupby("reference")["value"].median().to_dict()


def sgemm_median_ms(gpu: int, n: int, reps: int) -> float:
    log = gpurepro(
        "sgemm", str(n), str(reps), str(gpu), "--backend", "torch", "--device-check", "warn",
        "--idle-seconds", "1", "--energy-window-s", "3", "--cooldown-max-wait-s", "0",
    )  # fmt: skip
    return float(re.search(r"reps: median ([\d.]+) ms", log).group(1))


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--gpus", help="comma-separated GPU indices (default: every GPU NVML sees)")
    parser.add_argument("--n", type=int, default=8192, help="SGEMM size N (default 8192)")
    parser.add_argument("--reps", type=int, default=10, help="SGEMM reps (default 10)")
    args = parser.parse_args()
    with nvml.session():
        count = nvml.device_count()
        names = [nvml.gpu_info(i).name for i in range(count)]
    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else list(range(count))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for gpu in gpus:
            rates = reference_rates(gpu, Path(folder))
            rates[f"sgemm_n{args.n}_ms"] = sgemm_median_ms(gpu, args.n, args.reps)
            rows.append({"gpu": gpu, "name": names[gpu], **rates})
    table = pd.DataFrame(rows).set_index("gpu")
    numeric = table.drop(columns="name")
    ratios = numeric / numeric.loc[gpus[0]]
    pd.set_option("display.width", 200)
    print(f"medians per GPU ({args.n}: SGEMM N; reference: N=8192 products, 1 GiB copy):")
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    print(f"\neach against GPU {gpus[0]}:")
    print(ratios.to_string(float_format=lambda v: f"{v:.4f}"))
    worst = float((ratios.drop(columns="power_limit", errors="ignore") - 1).abs().max().max())
    print(f"\nlargest difference from GPU {gpus[0]}: {worst * 100:.2f}%")


if __name__ == "__main__":
    main()
