"""The fused batch norm: B batch norms (1-, 2- or 3-D) of C channels as one over B*C channels.

Its weight, bias and running statistics are the stacked per-model ones viewed as [B*C], so each
model's statistics are updated in place from its own batch, as B separate batch norms would be.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import FusionError
from ..layout import stacked_as_merged


class FusedBatchNorm(nn.Module):
    """B batch norms of C channels on the merged input [N, B*C, *space]: weight, bias, running_mean,
    running_var [B, C], num_batches_tracked [B]; training and evaluation as nn.BatchNorm's forward (with
    a momentum: a cumulative average would read one step count for all models)."""

    def __init__(self, norm: nn.modules.batchnorm._BatchNorm) -> None:
        super().__init__()
        if norm.momentum is None:
            raise FusionError("a fused batch norm needs a momentum (not a cumulative average)")
        self.eps, self.momentum = norm.eps, norm.momentum
        self.track_running_stats = norm.track_running_stats
        self.register_parameter("weight", norm.weight)
        self.register_parameter("bias", norm.bias)
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            self.register_buffer(name, getattr(norm, name))

    def forward(self, x: Tensor) -> Tensor:
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)  # every model's count: all B see a batch each step
        batch_statistics = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats  # running statistics read or updated
        return F.batch_norm(
            x,
            stacked_as_merged(self.running_mean) if keep else None,
            stacked_as_merged(self.running_var) if keep else None,
            stacked_as_merged(self.weight),
            stacked_as_merged(self.bias),
            batch_statistics,
            self.momentum,
            self.eps,
        )

    def extra_repr(self) -> str:
        return f"B*C={self.running_mean.numel() if self.running_mean is not None else '?'}, eps={self.eps}"
