"""The three workloads the benchmark times, each built, on the device asked for, into one operation
(blocks.Work): FP32 matrix products bound by the GPU, and eager DeiT inference and a ResNet-18 training
step, both bound by the host."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.nn.functional as F

from gpurepro.hfta.workloads import workload as hfta_workload
from gpurepro.hfta_study.training import Trainer
from gpurepro.inference.measure import synchronizer
from gpurepro.inference.models import build_vit
from gpurepro.inference.modes import build_runner
from gpurepro.sgemm.torch_mm import TorchSgemm

from .blocks import Work

WORKLOADS = ("sgemm", "deit-b", "resnet18")


def sgemm(args: argparse.Namespace, device: torch.device) -> Work:
    product = TorchSgemm(args.sgemm_n, device, seed=0)
    return Work(f"FP32 {args.sgemm_n}^3 matrix product", product, product.synchronize)


def deit(args: argparse.Namespace, device: torch.device) -> Work:
    model = build_vit(args.vit, 1, device)
    run = build_runner(model.forward, model.example, "eager", args.precision)
    return Work(f"eager {model.architecture} batch 1 {args.precision}", run, synchronizer(device))


def resnet18(args: argparse.Namespace, device: torch.device) -> Work:
    spec = hfta_workload("resnet18", image_size=args.resnet_image_size)
    torch.manual_seed(0)
    model = spec.make_model().to(device)
    inputs, targets = spec.make_batch(args.resnet_batch, torch.Generator().manual_seed(0), device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    trainer = Trainer(model, optimizer, F.cross_entropy, args.precision, device.type)
    return Work(
        f"{spec.description}, training step at batch {args.resnet_batch}, SGD, {args.precision}",
        lambda: trainer.step(inputs, targets),
        synchronizer(device),
    )


BUILDERS: dict[str, Callable[[argparse.Namespace, torch.device], Work]] = {
    "sgemm": sgemm,
    "deit-b": deit,
    "resnet18": resnet18,
}
