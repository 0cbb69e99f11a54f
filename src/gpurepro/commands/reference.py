"""`gpurepro reference GPU --out raw.csv`: the reference rates of one GPU (FP32 and FP16 matrix products,
memory bandwidth, power limit), through which the verdict scales absolute claims made on other GPUs."""

from __future__ import annotations

import argparse
import sys

import torch

from .. import plausibility, provenance
from ..measure_job import resolve_target
from ..reference.measure import ReferenceSettings, measure
from ..results import ensure_absent, write_raw
from ..telemetry.cooldown import busy
from .options import (
    add_config_hash_option,
    add_end_record_option,
    add_profile_options,
    gpu_or_cpu,
    positive_int,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reference",
        help="measure this GPU's reference rates (what absolute claims are scaled by)",
        description="Time FP32 (TF32 off) and FP16 N x N matrix products and a device-to-device copy, "
        "median over reps after a warm-up, and read the enforced power limit from NVML: this GPU's side "
        "of the ratio through which the verdict scales a claim made on another GPU (config/hardware/).",
    )
    parser.add_argument("gpu", type=gpu_or_cpu, help="GPU index, or 'cpu'")
    parser.add_argument("--gemm-n", type=positive_int, default=8192, help="matrix size N (default 8192)")
    parser.add_argument("--copy-mib", type=positive_int, default=1024, help="MiB copied (default 1024)")
    parser.add_argument("--reps", type=positive_int, default=20, help="timed reps of each (default 20)")
    add_profile_options(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="raw CSV, one row per rep (with a provenance sidecar); default: stdout")
    add_config_hash_option(parser)
    add_end_record_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.out:
        ensure_absent(args.out)
    target = resolve_target(args.gpu, args.profile, args.device_check)
    settings = ReferenceSettings(args.gemm_n, args.copy_mib, args.reps)
    gpus = [] if target.gpu_index is None else [target.gpu_index]
    started = provenance.begin(
        gpus, target.profile["name"], args.config_hash, {"device_mismatch": target.device_mismatch}
    )
    with busy(gpus, args.idle_temperature_dir):
        rows = measure(settings, torch.device(target.torch_device), target.gpu_index, args.seed)
    rows.insert(0, "device", "cpu" if target.gpu_index is None else str(target.gpu_index))
    rows.insert(0, "profile", target.profile["name"])
    medians = rows.groupby("reference", sort=False)["value"].median()
    units = rows.groupby("reference", sort=False)["unit"].first()
    for name in medians.index.intersection(list(plausibility.UNITS)):  # before anything is filed
        what = f"{target.where} reference {name}"
        plausibility.check_rate(name, float(medians[name]), provenance.gpu_name(started), what)
    if args.out:
        write_raw(rows, args.out, provenance.finish(started))
    else:
        rows.to_csv(sys.stdout, index=False)
    print(
        "reference rates: "
        + ", ".join(f"{name} {medians[name]:.4g} {units[name]}" for name in medians.index),
        file=sys.stderr,
    )
    return 0
