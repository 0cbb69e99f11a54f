"""`gpurepro sgemm N REPS GPU`: FP32 SGEMM repeated with telemetry, as the original `sgemm N reps gpu`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch

from ..errors import GpureproError
from ..harness import Workload
from ..measure_job import resolve_target, run_job
from ..sgemm import torch_mm
from ..sgemm.kernels import KERNEL_BACKENDS, KernelSgemm
from ..training.noise import READY_TIMEOUT_S, WORKLOADS, NoiseSettings, noise_during
from .options import add_measurement_options, gpu_or_cpu, job_settings, positive_int

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
    parser.add_argument(
        "--backend", choices=["torch", *KERNEL_BACKENDS], default="torch",
        help="torch: torch.mm with TF32 off (default, runs anywhere); cublas: cublasSgemm FP32 as the "
        "original study; tiled: our CUDA kernel (both from the binary built from kernels/)",
    )  # fmt: skip
    parser.add_argument("--warmup", type=int, default=5, help="untimed products before the timed ones")
    parser.add_argument("--run", type=positive_int, default=1, help="run number, when a point is repeated")
    parser.add_argument(
        "--binary", type=Path, help="the sgemm binary for cublas/tiled (from kernels/Makefile)"
    )
    parser.add_argument(
        "--mode", choices=["random", "sincos"], default="random",
        help="operands for cublas/tiled: seeded random (default), or the original study's sin/cos data",
    )  # fmt: skip
    add_measurement_options(parser)
    add_noise_options(parser)
    parser.set_defaults(func=run)


def add_noise_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("noise workload (on other GPUs while this one is measured)")
    group.add_argument(
        "--noise-workload", choices=WORKLOADS, default="none",
        help="resnet50: `gpurepro train resnet50 --until-stopped` on --noise-gpus for the whole measurement",
    )  # fmt: skip
    group.add_argument("--noise-gpus", help="GPU indices for the noise (e.g. 1,2,3), or 'cpu'")
    group.add_argument(
        "--noise-args", default="",
        help="further options of `gpurepro train resnet50`, e.g. '--batch-size 256 --precision fp16'",
    )  # fmt: skip
    group.add_argument(
        "--noise-ready-timeout-s", type=float, default=READY_TIMEOUT_S,
        help=f"longest wait for the noise to finish its warm-up (default {READY_TIMEOUT_S:g})",
    )  # fmt: skip


def noise_settings(args: argparse.Namespace) -> NoiseSettings:
    return NoiseSettings(
        args.noise_workload, args.noise_gpus, args.noise_args, args.noise_ready_timeout_s, args.profile
    )


def torch_workload(args: argparse.Namespace, device: torch.device) -> Workload:
    product = torch_mm.TorchSgemm(args.n, device, args.seed)

    def timed_reps() -> pd.DataFrame:
        reps = product.timed_reps(args.reps, args.warmup)
        error = float(reps["verify_rel_err"].iloc[0])
        # A wrong product is not a measurement: fail (the log keeps why) rather than file wrong numbers.
        if not error <= VERIFY_TOLERANCE:
            raise GpureproError(
                f"product verification failed: relative error {error:.2e} > {VERIFY_TOLERANCE:.0e}"
            )
        print(
            f"verified: relative Frobenius error {error:.2e} (tolerance {VERIFY_TOLERANCE:.0e})",
            file=sys.stderr,
        )
        return reps

    return Workload(timed_reps, product, product.synchronize)


def run(args: argparse.Namespace) -> int:
    if args.backend == "torch" and args.mode != "random":
        raise GpureproError("--mode sincos needs --backend cublas or tiled (the CUDA binary makes that data)")
    target = resolve_target(args.gpu, args.profile, args.device_check)
    if args.backend == "torch":
        prepare = lambda: torch_workload(args, torch.device(target.torch_device))  # noqa: E731
    else:
        if target.gpu_index is None:
            raise GpureproError(f"--backend {args.backend} runs on a GPU; pass a GPU index, not 'cpu'")
        if args.binary is None:
            raise GpureproError(
                f"--backend {args.backend} needs --binary (build it: make -f kernels/Makefile)"
            )
        kernel = KernelSgemm(
            args.binary, args.backend, args.n, args.reps, args.warmup, target.cuda_index, args.seed, args.mode
        )
        prepare = kernel.workload
    describe = {"backend": args.backend, "n": args.n, "data_mode": args.mode, "run": args.run}
    # Noise (if asked for) runs on the other GPUs from before the cool-down to after the energy window,
    # and is stopped however the measurement ends; its GPUs go into the table and the provenance.
    with noise_during(noise_settings(args), args.gpu) as noise:
        run_job(job_settings(args), target, {**describe, **noise.describe}, noise.watch(prepare))
    return 0
