"""Forward and backward milliseconds of each convolution of a fused ResNet-18 array in each form (cuDNN
grouped, batched matmul, Triton implicit GEMM), beside one dense cuDNN convolution doing the same
arithmetic on all B x batch images (what a dense model of the B models' work would run).

    python benchmarks/hfta_conv_forms.py --b-values 8 32

The shapes are read from torchvision's ResNet-18 at the given image size with forward hooks; each row
times one shape as ConvForms (gpurepro.hfta.ops.conv_forms) does when it chooses, with its fwd_bwd_ms
(fp16 autocast, channels-last, cuDNN's benchmark mode, one untimed call, then the mean of 3), and says
how many convolutions of the network have it. The total weighs each row by that count.
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from gpurepro.hfta.ops.conv_forms import (
    conv2d_as_matmul,
    conv2d_implicit_gemm,
    fwd_bwd_ms,
    layer_form_applies,
    triton_problem,
)

Shape = tuple[int, int, int, int, int, int, int]  # in channels, out, kernel, stride, padding, height, width


def resnet18_shapes(image_size: int) -> Counter[Shape]:
    """Each distinct convolution of ResNet-18 on image_size images, with how many layers have it."""
    shapes: Counter[Shape] = Counter()

    def record(conv: nn.Conv2d, inputs: tuple[torch.Tensor]) -> None:
        _, c, h, w = inputs[0].shape
        shapes[(c, conv.out_channels, conv.kernel_size[0], conv.stride[0], conv.padding[0], h, w)] += 1

    model = torchvision.models.resnet18()
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            module.register_forward_pre_hook(record)
    model(torch.zeros(1, 3, image_size, image_size))
    return shapes


def form_times(shape: Shape, B: int, batch: int, device: torch.device) -> dict[str, float]:
    """ms forward and backward of each form that applies, and of the dense convolution."""
    c, o, k, s, p, h, w = shape
    stem = c % 16 != 0  # the network's first convolution, on the data: no input gradient
    x = torch.randn(batch, B * c, h, w, device=device, dtype=torch.float16)
    x = x.to(memory_format=torch.channels_last).requires_grad_(not stem)
    weight = torch.randn(B * o, c, k, k, device=device).to(memory_format=torch.channels_last)
    weight.requires_grad_()
    forms = {
        "grouped": lambda x, w, b: F.conv2d(x, w, b, s, p, 1, B),
        "matmul": lambda x, w, b: conv2d_as_matmul(x, w, b, B, s, p),
    }
    if stem or layer_form_applies(c, o):
        forms["triton"] = lambda x, w, b: conv2d_implicit_gemm(x, w, b, B, (s, s), (p, p))
    times = {}
    with torch.autocast("cuda", dtype=torch.float16):
        for name, run in forms.items():
            times[name] = fwd_bwd_ms(run, x, weight, None)
        dense_x = torch.randn(B * batch, c, h, w, device=device, dtype=torch.float16)
        dense_x = dense_x.to(memory_format=torch.channels_last).requires_grad_(not stem)
        dense_w = weight[:o].detach().clone().requires_grad_()
        times["dense"] = fwd_bwd_ms(lambda x, w, b: F.conv2d(x, w, b, s, p), dense_x, dense_w, None)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="0", help="GPU index (default 0)")
    parser.add_argument("--b-values", type=int, nargs="+", default=[8, 32], help="B (default 8 32)")
    parser.add_argument("--batch-size", type=int, default=128, help="per model (default 128)")
    parser.add_argument("--image-size", type=int, default=64, help="image side (default 64)")
    args = parser.parse_args()
    device = torch.device(f"cuda:{args.device}")
    problem = triton_problem(device, torch.float16)
    if problem:
        raise SystemExit(f"the Triton form cannot run: {problem}")
    torch.backends.cudnn.benchmark = True
    shapes = resnet18_shapes(args.image_size)
    print(
        f"ResNet-18 {args.image_size}x{args.image_size}, batch {args.batch_size},",
        torch.cuda.get_device_name(device),
    )
    names = ["grouped", "matmul", "triton", "best", "dense"]
    for B in args.b_values:
        print(f"B={B}: ms forward and backward   (c, o, k, stride, pad, h, w) x layers")
        print("  " + "".join(f"{n:>9}" for n in names) + "   shape")
        totals = Counter[str]()
        for shape, count in shapes.items():
            times = form_times(shape, B, args.batch_size, device)
            best = times["best"] = min(t for n, t in times.items() if n != "dense")
            for name in names:
                totals[name] += count * times.get(name, best)  # a form that does not apply: the best
            print(
                "  " + "".join(f"{times.get(n, float('nan')):>9.3f}" for n in names) + f"   {shape} x{count}"
            )
        print(
            "  " + "".join(f"{totals[n]:>9.2f}" for n in names) + "   the network (absent forms at the best)"
        )


if __name__ == "__main__":
    main()
