"""Which architectures run merged: those made of layers that have a fused op or act per channel.

The `merged` strategy of FusedArray. The B models' activations are one tensor [N, B*C, *space] (model
b's channels at b*C to (b+1)*C, layout.py) and the architecture's own forward runs on it with each
convolution, batch norm and linear layer replaced by its fused op (ops/: a grouped convolution, a batch
norm over B*C channels, a batched matmul). Every other op of the forward runs as it is, so it must act
per channel or per element: ReLU, addition of same-shaped tensors, max and adaptive average pooling,
dropout and flattening from dim 1. Any other op could mix the models (a reshape, a mean over the
channels, attention), so only architectures made of the modules in MERGEABLE_CONTAINERS and
MERGEABLE_LAYERS run merged (`why_not_merged` names the first module that is not); vmap (fused.py)
runs the rest.

Why merged at all: it computes what vmap computes, without vmap's cost per op and per step (wrapping
every tensor, functional_call swapping every parameter, the batching rules' layout changes: copies
around max pooling, batch norm's per-model scale and shift in extra passes, in-place ReLU and residual
additions on views that autograd copies back in the backward). On an H100, a fused ResNet-18 training
step (128 images of 64x64 per model, fp16 AMP, cudnn.benchmark) took 86.7 ms under vmap and 41.7 ms
merged at B=32, 49.4 and 16.6 ms at B=8; at B=1 a vmap step took 33 ms, hand-written fused modules 6 ms
(host time).
"""

from __future__ import annotations

from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

from .ops import FUSED_LAYERS, PER_CHANNEL_LAYERS

# Containers whose forward calls only their submodules, elementwise additions and torch.flatten(x, 1).
MERGEABLE_CONTAINERS = (nn.Sequential, ResNet, BasicBlock, Bottleneck)
MERGEABLE_LAYERS = (*FUSED_LAYERS, *PER_CHANNEL_LAYERS)


def _layer_settings_problem(module: nn.Module) -> str | None:
    """What keeps a listed layer from running merged, if anything."""
    if isinstance(module, nn.modules.conv._ConvNd) and module.padding_mode != "zeros":
        return f"padding_mode={module.padding_mode!r} (only 'zeros' runs merged)"
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.momentum is None:
        return "momentum=None (a cumulative average reads one step count for all models)"
    if isinstance(module, nn.Flatten) and (module.start_dim, module.end_dim) != (1, -1):
        return "flattening other dims than 1 to -1 (it would mix the models)"
    return None


def why_not_merged(model: nn.Module) -> str | None:
    """Why `model` cannot run merged, naming its first module that cannot; None if it can."""
    for name, module in model.named_modules():
        kind = type(module)  # exact types: a subclass may have its own forward
        where = f"module '{name}'" if name else "the model"
        if kind not in MERGEABLE_CONTAINERS + MERGEABLE_LAYERS:
            return f"{where} ({kind.__qualname__}) has no merged form"
        problem = _layer_settings_problem(module)
        if problem:
            return f"{where} ({kind.__qualname__}) has {problem}"
    return None


# Architectures whose activations can stay model-major, [B, N, features], from input to output: linear
# layers take it as it is (one batched matmul), the rest act per element. No transposes to and from the
# merged [N, B*features] around each linear layer.
MODEL_MAJOR = (nn.Sequential, nn.Linear, nn.ReLU, nn.Dropout, nn.Identity)


def runs_model_major(model: nn.Module) -> bool:
    """Whether `model` (mergeable) is made of MODEL_MAJOR modules alone (an MLP)."""
    return all(type(module) in MODEL_MAJOR for module in model.modules())
