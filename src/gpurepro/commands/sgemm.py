"""`gpurepro sgemm N REPS GPU`: FP32 SGEMM repeated with telemetry, as the original `sgemm N reps gpu`."""

from __future__ import annotations

import argparse
import sys

import pandas as pd
import torch

from ..harness import Workload
from ..measure_job import resolve_target, run_job
from ..sgemm import torch_mm
from .options import add_measurement_options, gpu_or_cpu, positive_int

# FP32 accumulation over N terms of uniform(-0.5, 0.5) data: errors grow about sqrt(N) * 6e-8, so 1e-5
# at N=25536; 1e-4 leaves headroom for blocked summation orders yet catches any wrong element or block.
VERIFY_TOLERANCE = 1e-4


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sgemm",
        help="time FP32 SGEMM (C = A @ B, N x N) per repetition with telemetry",
        description="Time REPS FP32 matrix products of size N on GPU (an index, or 'cpu'), after warm-up, "
        "with the telemetry sampler running; then measure energy per product over a separate window.",
    )
    parser.add_argument("n", type=positive_int, help="matrix size N")
    parser.add_argument("reps", type=positive_int, help="timed repetitions")
    parser.add_argument("gpu", type=gpu_or_cpu, help="GPU index, or 'cpu'")
    parser.add_argument("--backend", choices=["torch"], default="torch", help="torch: torch.mm, TF32 off")
    parser.add_argument("--warmup", type=int, default=5, help="untimed products before the timed ones")
    add_measurement_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = resolve_target(args.gpu, args.profile, args.device_check)

    def prepare() -> Workload:
        product = torch_mm.TorchSgemm(args.n, torch.device(target.torch_device), args.seed)

        def timed_reps() -> pd.DataFrame:
            reps = product.timed_reps(args.reps, args.warmup)
            reps["verified"] = reps["verify_rel_err"] <= VERIFY_TOLERANCE
            return reps

        return Workload(timed_reps, product, product.synchronize)

    reps = run_job(args, target, {"backend": args.backend, "n": args.n}, prepare)
    error = float(reps["verify_rel_err"].max())
    # A wrong product is recorded (column `verified`) rather than failing the job, so the raw file survives
    # for inspection; aggregation and plots flag it.
    verdict = "verified" if error <= VERIFY_TOLERANCE else "WARNING: product verification FAILED"
    print(
        f"{verdict}: relative Frobenius error {error:.2e} (tolerance {VERIFY_TOLERANCE:.0e})", file=sys.stderr
    )
    return 0
