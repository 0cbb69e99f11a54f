"""Horizontal fusion of training jobs (HFTA, MLSys'21): B models of one architecture trained as one
array, each with its own weights, batch-norm statistics and hyperparameters.

    spec = workload("resnet18")
    array = FusedArray([spec.make_model() for _ in range(B)]).to(device)
    optimizer = fused_optimizer(array, "sgd", lr=[0.1, 0.05, ...], momentum=0.9)
    losses = fused_loss(array(inputs), targets)   # inputs [B, N, *sample_shape], targets [B, N]
    losses.sum().backward(); optimizer.step()
"""

from .errors import FusionError
from .fused import FusedArray, fused_loss
from .optim import OPTIMIZERS, FusedAdamW, FusedSGD, fused_optimizer
from .workloads import WORKLOAD_NAMES, WorkloadSpec, workload

__all__ = [
    "OPTIMIZERS",
    "WORKLOAD_NAMES",
    "FusedAdamW",
    "FusedArray",
    "FusedSGD",
    "FusionError",
    "WorkloadSpec",
    "fused_loss",
    "fused_optimizer",
    "workload",
]
