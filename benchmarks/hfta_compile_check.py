#!/usr/bin/env python3
"""Does torch.compile trace the fused arrays whole? For each workload, B models fused as `gpurepro hfta`
trains them (channels-last ResNet-18 on a GPU, AMP there), one eager training step first (it times the
fused convolutions' forms, as a compiled training step does), then torch._dynamo.explain over the fused
forward: graphs, graph breaks and their reasons, and the strategy each array runs.

    python benchmarks/hfta_compile_check.py [--device 0] [-B 8] [--batch-size 128]
    python benchmarks/hfta_compile_check.py --device cpu -B 2 --batch-size 4   # small, on the CPU
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch

from gpurepro.hfta import WORKLOAD_NAMES, FusedArray, fused_loss, workload


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="0", help="GPU index, or 'cpu' (default 0)")
    parser.add_argument("-B", type=int, default=8, help="models fused (default 8)")
    parser.add_argument("--batch-size", type=int, default=128, help="per model (default 128)")
    args = parser.parse_args()
    device = torch.device("cpu" if args.device == "cpu" else f"cuda:{args.device}")
    torch.backends.cudnn.benchmark = True
    amp = torch.autocast("cuda", dtype=torch.float16) if device.type == "cuda" else contextlib.nullcontext()
    for name in WORKLOAD_NAMES:
        spec = workload(name)
        torch.manual_seed(0)
        channels_last = name == "resnet18" and device.type == "cuda"
        array = FusedArray([spec.make_model() for _ in range(args.B)], channels_last=channels_last).to(device)
        generator = torch.Generator().manual_seed(0)
        pairs = [spec.make_batch(args.batch_size, generator, device) for _ in range(args.B)]
        x, y = array.arrange(torch.stack([p[0] for p in pairs])), torch.stack([p[1] for p in pairs])
        with amp:
            fused_loss(array(x), y).sum().backward()  # eager: the forms of the fused convolutions timed
            start = time.perf_counter()
            explained = torch._dynamo.explain(array)(x)
        reasons = [str(b.reason).splitlines()[0][:200] for b in explained.break_reasons]
        forms = sorted(set(array.conv_forms.chosen.values()))
        print(
            f"{name}: strategy {array.strategy}, {explained.graph_count} graph(s), "
            f"{explained.graph_break_count} graph break(s) {reasons}, conv forms {forms}, "
            f"traced in {time.perf_counter() - start:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
