#!/usr/bin/env python3
"""Build kernels/ for one arch and time cuBLAS against the tiled kernel, side by side.

For each size (and tile configuration) one `sgemm N REPS GPU --impl both` run
alternates the two implementations rep by rep, so both see the same clocks and
temperature. nvidia-smi samples the SM clock and power in the background; each
sample is matched to the rep it falls in (by the reps' host timestamps), and
the peak FP32 rate at the observed clock, SMs x FP32 lanes x 2 x clock, is
printed beside the measured rates.

    python3 benchmarks/sgemm_kernels.py --arch sm_90 --sizes 8192 25536 --reps 20

Writes per-run CSVs, logs, the clock samples and summary.csv to --out-dir and
prints the summary table last.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# FP32 lanes per SM by compute capability (CUDA C++ Programming Guide,
# arithmetic instruction throughput table).
FP32_LANES = {
    "70": 64,
    "72": 64,
    "75": 64,
    "80": 64,
    "86": 128,
    "87": 128,
    "89": 128,
    "90": 128,
    "100": 128,
    "103": 128,
    "110": 128,
    "120": 128,
    "121": 128,
}
DEVICE_RE = re.compile(
    r"device \d+: (?P<name>.*), (?P<uuid>GPU-[0-9a-f-]+), sm_(?P<cc>\d+), (?P<sms>\d+) SMs"
)
TILE_RE = re.compile(r"tiled kernel config (\S+)")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", help="e.g. sm_90 (default: GPU 0's compute capability per nvidia-smi)")
    p.add_argument("--sizes", type=int, nargs="+", default=[8192, 25536])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--gpu", type=int, default=0, help="CUDA device index passed to sgemm")
    p.add_argument(
        "--tiles",
        nargs="+",
        default=["default"],
        help="tiled configurations: names, 'default' (the binary's choice) or 'all'",
    )
    p.add_argument("--build-dir", type=Path, default=ROOT / "build" / "kernels")
    p.add_argument("--out-dir", type=Path, help="default: build/sgemm_bench/<UTC time>")
    p.add_argument("--no-build", action="store_true", help="use the binaries already in --build-dir")
    p.add_argument("--sample-ms", type=int, default=50, help="nvidia-smi sampling interval")
    return p.parse_args()


def detect_arch() -> str:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return "sm_" + out[0].replace(".", "")


def tile_names(sgemm: Path) -> list[str]:
    text = subprocess.run([str(sgemm), "--help"], capture_output=True, text=True, check=True).stdout
    return [t.strip() for t in text.split("one of:", 1)[1].split("\n")[1].split(",")]


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def read_samples(path: Path) -> list[tuple[float, str, float, float]]:
    """(unix time, uuid, SM clock MHz, power W) per nvidia-smi sample line."""
    samples = []
    for line in path.read_text().splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 4:
            continue
        try:  # nvidia-smi prints local time, as datetime.timestamp() assumes
            t = dt.datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, fields[1], float(fields[2]), float(fields[3])))
        except ValueError:
            continue  # "[N/A]" fields or a line cut off at the end
    return samples


def fmt(value: float | None, width: int, decimals: int) -> str:
    return "n/a".rjust(width) if value is None else f"{value:>{width}.{decimals}f}"


def main() -> int:
    args = parse_args()
    arch = args.arch or detect_arch()
    build_dir = args.build_dir.resolve()
    out_dir = args.out_dir or ROOT / "build" / "sgemm_bench" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out_dir.mkdir(parents=True, exist_ok=True)
    if not args.no_build:
        subprocess.run(
            [
                "make",
                "-f",
                str(ROOT / "kernels" / "Makefile"),
                f"ARCH={arch}",
                f"BUILD_DIR={build_dir}",
                "-j8",
            ],
            check=True,
        )
    sgemm = build_dir / "sgemm"
    tiles = tile_names(sgemm) if args.tiles == ["all"] else args.tiles

    sampler_log = out_dir / "smi_samples.csv"
    sampler = subprocess.Popen(
        [
            "nvidia-smi",
            "--query-gpu=timestamp,uuid,clocks.sm,power.draw",
            "--format=csv,noheader,nounits",
            f"--loop-ms={args.sample_ms}",
            f"--filename={sampler_log}",
        ]
    )
    runs = []
    try:
        time.sleep(1.0)  # a few idle samples first
        for n in args.sizes:
            for tile in tiles:
                tag = f"{n}_{tile}"
                csv_path, log_path = out_dir / f"sgemm_{tag}.csv", out_dir / f"sgemm_{tag}.log"
                cmd = [
                    str(sgemm),
                    str(n),
                    str(args.reps),
                    str(args.gpu),
                    "--impl",
                    "both",
                    "--warmup",
                    str(args.warmup),
                    "--out",
                    str(csv_path),
                ] + ([] if tile == "default" else ["--tile", tile])
                print("+", " ".join(cmd), file=sys.stderr, flush=True)
                with log_path.open("w") as log:
                    rc = subprocess.run(cmd, stderr=log, cwd=out_dir).returncode
                log_text = log_path.read_text()
                sys.stderr.write(log_text)
                if rc != 0:
                    print(f"sgemm failed (exit {rc}) for N={n} tile={tile}", file=sys.stderr)
                    return rc
                runs.append((n, csv_path, log_text))
    finally:
        sampler.terminate()
        sampler.wait()

    samples = read_samples(sampler_log)
    summary = []
    for n, csv_path, log_text in runs:
        dev = DEVICE_RE.search(log_text)
        chosen = TILE_RE.search(log_text)
        with csv_path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        by_impl: dict[str, dict[str, float | None | str]] = {}
        for impl in ("cublas", "tiled"):
            mine = [r for r in rows if r["impl"] == impl]
            windows = [(float(r["t_start_unix_s"]), float(r["t_end_unix_s"])) for r in mine]
            inside = [s for s in samples if s[1] == dev["uuid"] and any(a <= s[0] <= b for a, b in windows)]
            clock = median_or_none([s[2] for s in inside])
            lanes = FP32_LANES.get(dev["cc"])
            peak = int(dev["sms"]) * lanes * 2 * clock * 1e6 / 1e12 if clock and lanes else None
            tflops = statistics.median(float(r["tflops"]) for r in mine)
            by_impl[impl] = {
                "gpu": dev["name"],
                "n": n,
                "impl": impl,
                "tile": chosen[1] if impl == "tiled" else "-",
                "median_ms": statistics.median(float(r["ms"]) for r in mine),
                "median_tflops": tflops,
                "verify_rel_err": mine[0]["verify_rel_err"],
                "sm_clock_mhz": clock,
                "clock_samples": len(inside),
                "peak_tflops_at_clock": peak,
                "pct_of_peak": 100 * tflops / peak if peak else None,
                "power_w": median_or_none([s[3] for s in inside]),
            }
        ratio = by_impl["tiled"]["median_tflops"] / by_impl["cublas"]["median_tflops"]
        for impl in ("cublas", "tiled"):
            by_impl[impl]["tiled_over_cublas"] = ratio
            summary.append(by_impl[impl])

    with (out_dir / "summary.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(summary[0]))
        writer.writeheader()
        writer.writerows(summary)
    print(f"\nGPU: {summary[0]['gpu']}   results: {out_dir}")
    header = (
        f"{'impl':6} {'N':>6} {'tile':30} {'med ms':>9} {'TFLOP/s':>8} {'tiled/cub':>9} {'verify':>9} "
        f"{'SM MHz':>7} {'peak@clk':>8} {'%peak':>6} {'W':>5}"
    )
    print(header)
    print("-" * len(header))
    for s in summary:
        print(
            f"{s['impl']:6} {s['n']:>6} {s['tile']:30} {s['median_ms']:>9.3f} {s['median_tflops']:>8.2f} "
            f"{s['tiled_over_cublas']:>9.3f} {s['verify_rel_err']:>9} {fmt(s['sm_clock_mhz'], 7, 0)} "
            f"{fmt(s['peak_tflops_at_clock'], 8, 2)} {fmt(s['pct_of_peak'], 6, 1)} {fmt(s['power_w'], 5, 0)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
