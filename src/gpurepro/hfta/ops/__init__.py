"""HFTA's fused ops: each layer of B models as one ordinary module holding the B models' stacked
parameters, so that a fused model is a plain nn.Module (HFTA's own way, github.com/UofT-EcoSystem/hfta,
hfta/ops/). One file per op, each computing the B layers at once on the merged layout (layout.py):

- conv.py: `FusedConv`, one grouped convolution with B times the groups; a 2-D one in the form that
  conv_forms/ times fastest for its shape (grouped, a batched matmul, or Triton's implicit GEMMs);
- batchnorm.py: `FusedBatchNorm`, one batch norm over the B*C channels, each model's running
  statistics updated in place from its own batch;
- linear.py: `FusedLinear`, one batched matmul, on the merged [N, B*in] or model-major [B, N, in].

`FUSED_LAYERS` is the map from each torch layer to its fused op; the layers of `PER_CHANNEL_LAYERS`
act per channel or per element and stay the architecture's own (ReLU, pooling, dropout, flattening
from dim 1; same-shaped additions need no module). Together they are what an architecture may be made
of to run merged (merged.py). `fuse_layers` replaces, in a model holding stacked [B, ...] tensors, each
layer by its fused op holding those same tensors under the same names (so state_dict, the optimizer's
parameters and unfusing see the layers as before).

Why modules and not a torch function mode over the architecture's forward (the earlier way, an op
table applied to every call): a mode puts a Python call on every op and attribute read of the forward,
which on a GPU made a fused ResNet-18 step take twice one model's host time (about 25 ms against 12 on
an H100 host), and torch.compile could not trace it. Fused modules cost the host what one model's
layers cost, and torch.compile traces them whole.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from .batchnorm import FusedBatchNorm
from .conv import FusedConv
from .conv_forms import ConvForms
from .linear import FusedLinear

FuseLayer = Callable[[nn.Module, int, ConvForms], nn.Module]  # (layer, B, conv forms) -> its fused op

FUSED_LAYERS: dict[type[nn.Module], FuseLayer] = {
    **dict.fromkeys((nn.Conv1d, nn.Conv2d, nn.Conv3d), lambda conv, B, forms: FusedConv(conv, B, forms)),
    **dict.fromkeys(
        (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d), lambda norm, B, _: FusedBatchNorm(norm)
    ),
    nn.Linear: lambda linear, B, _: FusedLinear(linear, B),
}
PER_CHANNEL_LAYERS = (nn.ReLU, nn.MaxPool2d, nn.AdaptiveAvgPool2d, nn.Dropout, nn.Flatten, nn.Identity)


def _fused_layer(module: nn.Module, B: int, conv_forms: ConvForms) -> nn.Module | None:
    """The fused op standing for `module` (holding its stacked tensors); None for one that stays."""
    fuse = FUSED_LAYERS.get(type(module))  # exact types: a subclass may have its own forward
    if fuse is None:
        return None
    fused = fuse(module, B, conv_forms)
    fused.training = module.training  # a frozen batch norm stays in eval mode
    return fused


def fuse_layers(stacked: nn.Module, B: int, conv_forms: ConvForms) -> nn.Module:
    """`stacked`, a model holding the B models' stacked [B, ...] tensors, with every convolution, batch
    norm and linear layer replaced by its fused op (in place; the root itself when it is one). The
    architecture's other modules and its forward stay: the caller checks they act per channel
    (merged.why_not_merged)."""
    root = _fused_layer(stacked, B, conv_forms)
    if root is not None:
        return root
    for name, module in list(stacked.named_modules()):
        fused = _fused_layer(module, B, conv_forms) if name else None
        if fused is not None:
            owner, _, leaf = name.rpartition(".")
            setattr(stacked.get_submodule(owner), leaf, fused)
    return stacked


__all__ = [
    "FUSED_LAYERS",
    "PER_CHANNEL_LAYERS",
    "FusedBatchNorm",
    "FusedConv",
    "FusedLinear",
    "fuse_layers",
]
