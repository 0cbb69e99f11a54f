"""`gpurepro infer vit|bert`: latency (torch.utils.benchmark) and energy per inference of DeiT and BERT,
as the original `vit_infer.py -m deit-b` and `bert_infer.py -m bert-b -s 128`, under the shared harness
(cool-down, idle baseline, active idle, telemetry, a separate NVML energy window)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import torch

from ..errors import GpureproError
from ..inference.models import BERT_MAX_SEQ_LEN, BERT_MODELS, VIT_MODELS, BuiltModel, build_bert, build_vit
from ..inference.modes import MODES, cast_protocol
from ..measure_job import record_failure, resolve_target, run_job
from ..point_failure import PointFailed, first_line
from ..precision import PRECISIONS, pick_precision
from .options import add_measurement_options, default_gpu, gpu_or_cpu, job_files, job_settings, positive_int


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-b", "--batch-size", type=positive_int, default=1, help="inputs per inference (default 1)"
    )
    parser.add_argument(
        "--precision", choices=PRECISIONS,
        help="fp32 (TF32 off), tf32, or fp16/bf16 autocast (AMP); must be in the profile's precisions. "
        "Default: fp16 (the original's AMP) where the profile has it, else fp32",
    )  # fmt: skip
    parser.add_argument(
        "--mode", choices=MODES, default="eager",
        help="eager (the original), compile (torch.compile), cudagraph (CUDA graph replay; GPU only)",
    )  # fmt: skip
    parser.add_argument(
        "--gpu", type=gpu_or_cpu,
        help="GPU index, or 'cpu' (default: GPU 0 where NVML finds one, else cpu)",
    )  # fmt: skip
    parser.add_argument(
        "--min-run-time", type=float, default=2.0,
        help="seconds of timed blocks for Timer.blocked_autorange (default 2)",
    )  # fmt: skip
    parser.add_argument(
        "--warmup", type=int, default=10, help="untimed inferences after compile/capture (default 10)"
    )
    parser.add_argument("--run", type=positive_int, default=1, help="run number, when a point is repeated")
    add_measurement_options(parser, active_idle=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "infer",
        help="latency and energy per inference of DeiT (vit) and BERT (bert)",
        description="Time inference with torch.utils.benchmark (median, IQR over blocks) and measure "
        "energy per inference from NVML's energy counter over a separate window, with telemetry.",
    )
    families = parser.add_subparsers(dest="family", metavar="FAMILY", required=True)
    vit = families.add_parser(
        "vit", help="DeiT-T/S/B (timm, random weights), 3x224x224 images",
        description="DeiT image classification (timm deit_*_patch16_224, random weights, no downloads).",
    )  # fmt: skip
    vit.add_argument("-m", "--model", required=True, choices=list(VIT_MODELS))
    _common_options(vit)
    bert = families.add_parser(
        "bert", help="BERT-B/L sequence classification (transformers, random weights)",
        description="BERT for sequence classification, 2 labels (transformers, config written out here, "
        "random weights, no downloads); input: random token ids, no padding.",
    )  # fmt: skip
    bert.add_argument("-m", "--model", required=True, choices=list(BERT_MODELS))
    bert.add_argument(
        "-s", "--seq-len", type=positive_int, default=128,
        help=f"tokens per sequence, at most {BERT_MAX_SEQ_LEN} (default 128)",
    )  # fmt: skip
    _common_options(bert)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.family == "bert" and args.seq_len > BERT_MAX_SEQ_LEN:
        raise GpureproError(f"--seq-len {args.seq_len} is longer than BERT's {BERT_MAX_SEQ_LEN} positions")
    if args.min_run_time <= 0:
        raise GpureproError(f"--min-run-time must be positive, got {args.min_run_time}")
    gpu = default_gpu() if args.gpu is None else args.gpu
    target = resolve_target(gpu, args.profile, args.device_check)
    precision = pick_precision(args.precision, target.profile)
    if args.mode == "cudagraph" and target.gpu_index is None:
        raise GpureproError(
            "--mode cudagraph replays a CUDA graph and needs a GPU; on the CPU use eager or compile"
        )
    if target.gpu_index is not None and not torch.cuda.is_available():
        raise GpureproError(
            f"NVML sees GPU {target.gpu_index}, but this torch has no CUDA ({torch.__version__})"
        )
    device = torch.device(target.torch_device)

    build: Callable[[], BuiltModel]
    describe: dict[str, Any] = {"family": "deit" if args.family == "vit" else "bert", "model": args.model}
    if args.family == "vit":
        build = lambda: build_vit(args.model, args.batch_size, device, args.seed)  # noqa: E731
        describe["batch_size"] = args.batch_size
    else:
        build = lambda: build_bert(args.model, args.batch_size, args.seq_len, device, args.seed)  # noqa: E731
        describe.update(batch_size=args.batch_size, seq_len=args.seq_len)
    describe.update(precision=precision, mode=args.mode, run=args.run, min_run_time_s=args.min_run_time)
    label = ", ".join(f"{key} {describe[key]}" for key in describe if key not in ("family", "min_run_time_s"))
    # in every raw row and the sidecar, failed points too: how weights were cast (modes.py)
    describe["cast_protocol"] = cast_protocol(args.mode, precision)

    # Imported here: torch.utils.benchmark pulls in the C++ extension machinery, which every other
    # `gpurepro` command can do without.
    from ..inference.measure import inference_workload

    def prepare():  # -> harness.Workload
        # Not before: since CUDA 12 setting the device creates the CUDA context, which raises the GPU's
        # power above idle, and the harness takes the idle baseline before calling prepare.
        if device.type == "cuda":
            torch.cuda.set_device(device)  # graph capture and compilation use the current device
        return inference_workload(build, args.mode, precision, args.min_run_time, args.warmup, label)

    try:
        run_job(job_settings(args), target, describe, prepare)
    except PointFailed as failure:
        return record_failure(job_files(args), target, describe, f"{args.mode}: {failure}")
    except torch.OutOfMemoryError as err:
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return record_failure(job_files(args), target, describe, f"out of memory: {first_line(err)}")
    print(f"done: {label}", file=sys.stderr)
    return 0
