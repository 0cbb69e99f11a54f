#!/usr/bin/env python3
"""How closely do B fused models follow B models trained separately? The agreement figures to quote.

For each workload and B, B models are trained from the same initial weights on the same batches, once
separately (torch.optim.SGD with momentum / torch.optim.AdamW, one per model) and once fused
(gpurepro.hfta.FusedArray + fused_optimizer), with learning rates and weight decays that differ per
model, for --steps steps; the table gives the largest absolute and relative (to each tensor's scale)
differences of parameters, losses and batch-norm buffers, whether num_batches_tracked agrees, and
whether the figures are within the library's tolerance for the dtype (gpurepro.hfta.agreement explains
both, and why float32 ResNet-18 and AdamW runs may exceed it without any error). In float32 the
separate training is also run in float64 (unless --no-float64-reference): the last two columns are
float32's own error against it, the yardstick for the fused-vs-separate figures. On a GPU, TF32 is off
during the comparison, so both sides compute in plain float32.

    python benchmarks/hfta_fusion_check.py --device cuda --steps 10
    python benchmarks/hfta_fusion_check.py --device cpu --steps 3 --batch 4 --dtype float64

Workload sizes default to the study's (ResNet-18 on 3x64x64 with 200 classes, the transformer on 128
tokens); --image-size and --seq-len shrink them for a quick CPU run.
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd
import torch

from gpurepro.hfta import CONV_FORMS, OPTIMIZERS, STRATEGIES, WORKLOAD_NAMES, workload
from gpurepro.hfta.agreement import TOLERANCES, compare_training

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    parser.add_argument("--B", type=int, nargs="+", default=[1, 2, 4, 8], help="array sizes")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOAD_NAMES, default=list(WORKLOAD_NAMES))
    parser.add_argument("--optimizers", nargs="+", choices=OPTIMIZERS, default=list(OPTIMIZERS))
    parser.add_argument("--batch", type=int, default=8, help="samples per model per step (default 8)")
    parser.add_argument("--image-size", type=int, default=64, help="resnet18 images (default 64)")
    parser.add_argument("--seq-len", type=int, default=128, help="transformer tokens (default 128)")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-float64-reference",
        dest="float64_reference",
        action="store_false",
        help="skip the float64 run of the separate training that shows float32's own error",
    )
    parser.add_argument(
        "--channels-last",
        action="store_true",
        help="build the arrays channels-last (FusedArray(channels_last=True), as the study on a GPU)",
    )
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="auto",
        help="FusedArray strategy (default auto: merged for ResNet-18 and the MLP, vmap for the transformer)",
    )
    parser.add_argument(
        "--conv-form",
        choices=CONV_FORMS,
        default="auto",
        help="how merged arrays run 2-D convolutions (default auto: the faster, timed on a GPU in cuDNN "
        "benchmark mode; grouped elsewhere)",
    )
    parser.add_argument("--csv", help="also write the table to this CSV file")
    args = parser.parse_args()
    if args.steps < 1 or args.batch < 2 or min(args.B) < 1:
        parser.error("--steps and --B must be at least 1, --batch at least 2 (batch norm needs 2 samples)")
    return args


def main() -> int:
    args = parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device is available to torch here; run with --device cpu", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__} on {where}; {args.dtype}, TF32 off; {args.steps} steps, "
          f"batch {args.batch} per model; channels-last {args.channels_last}; strategy {args.strategy}; "
          f"conv form {args.conv_form}; "
          f"tolerance {TOLERANCES[dtype]}")  # fmt: skip
    rows = []
    for name in args.workloads:
        spec = workload(name, image_size=args.image_size, seq_len=args.seq_len)
        print(f"{name}: {spec.description}", flush=True)
        for optimizer in args.optimizers:
            for B in args.B:
                started = time.perf_counter()
                agreement = compare_training(
                    spec, B, optimizer, steps=args.steps, batch=args.batch, device=device,
                    seed=args.seed, dtype=dtype,
                    float64_reference=args.float64_reference and dtype != torch.float64,
                    channels_last=args.channels_last, strategy=args.strategy, conv_form=args.conv_form,
                )  # fmt: skip
                failures = agreement.failures()
                rows.append({**agreement.row(), "within_tolerance": not failures,
                             "worst_parameter": agreement.parameters.worst,
                             "seconds": round(time.perf_counter() - started, 1)})  # fmt: skip
                print(f"  {optimizer} B={B}: {'within tolerance' if not failures else '; '.join(failures)}",
                      flush=True)  # fmt: skip
    table = pd.DataFrame(rows)
    if args.csv:
        table.to_csv(args.csv, index=False)
    columns = ["workload", "optimizer", "B", "param_max_abs", "param_max_rel", "loss_max_abs", "loss_max_rel",
               "buffer_max_abs", "buffer_max_rel", "counters_equal", "within_tolerance",
               "separate_vs_float64_param_max_rel", "separate_vs_float64_loss_max_rel"]  # fmt: skip
    if table[columns[-1]].isna().all():
        columns = columns[:-2]
    print()
    print(table[columns].to_string(index=False, float_format=lambda v: f"{v:.2e}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
