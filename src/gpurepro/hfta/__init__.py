"""Horizontal fusion of training jobs (HFTA, MLSys'21): B models of one architecture trained as one
array, each with its own weights, batch-norm statistics and hyperparameters.

    spec = workload("resnet18")
    array = FusedArray([spec.make_model() for _ in range(B)]).to(device)
    optimizer = fused_optimizer(array, "sgd", lr=[0.1, 0.05, ...], momentum=0.9)
    losses = fused_loss(array(inputs), targets)   # inputs [B, N, *sample_shape], targets [B, N]
    losses.sum().backward(); optimizer.step()

Where things are:
- fused.py: `FusedArray` (its `strategy`, one of STRATEGIES: merged or vmap) and `fused_loss`;
- merged.py and layout.py: which architectures run merged, and the merged layout [N, B*C, ...];
- ops/: the fused ops, one file per torch op (conv, batchnorm, linear), and the map from each torch
  layer to its fused op; ops/conv_forms/ the forms a fused 2-D convolution runs in (CONV_FORMS: cuDNN
  grouped, a batched matmul, Triton implicit GEMMs) and the choice between them;
- vmap_repairs.py: what the vmap strategy puts right in vmap's batching rules;
- optim.py: the fused optimizers; workloads.py and encoder.py: the study's three workloads.

The fused-vs-separate agreement check is public too, `gpurepro.hfta.agreement`: `compare_training`
trains B models of a workload fused and separately from the same weights on the same batches and
measures how far they end apart, against tolerances whose reasons its docstring gives. The tests hold
the library to it, and benchmarks/hfta_fusion_check.py prints its figures for any device, dtype and B.
"""

from .errors import FusionError
from .fused import STRATEGIES, FusedArray, fused_loss
from .ops.conv_forms import CONV_FORMS
from .optim import OPTIMIZERS, FusedAdamW, FusedSGD, fused_optimizer
from .workloads import WORKLOAD_NAMES, WorkloadSpec, workload

__all__ = [
    "CONV_FORMS",
    "OPTIMIZERS",
    "STRATEGIES",
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
