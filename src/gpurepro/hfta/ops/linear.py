"""The fused linear layer: B linear layers as one batched matmul, weight [B, out, in].

It takes the merged [N, B*in] (after a ResNet's flatten) or the models' own [B, N, in] (an MLP's input,
kept model-major through the network: no transposes between layers, as HFTA's Linear does), and gives
its output in the same layout.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..errors import FusionError


def _model_major(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """B linear layers on x [B, N, in] -> [B, N, out]; weight [B, out, in], bias [B, out] or None."""
    w = weight.transpose(1, 2)  # [B, in, out]
    return torch.bmm(x, w) if bias is None else torch.baddbmm(bias.unsqueeze(1), x, w)


class FusedLinear(nn.Module):
    """B linear layers: weight [B, out, in], bias [B, out] or None; input merged [N, B*in] or
    model-major [B, N, in], output in the same layout."""

    def __init__(self, linear: nn.Linear, B: int) -> None:
        super().__init__()
        self.B = B
        self.weight = linear.weight
        self.register_parameter("bias", linear.bias)

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 3:
            return _model_major(x, self.weight, self.bias)
        if x.dim() != 2:
            raise FusionError(f"a merged linear layer takes [N, B*features], got {tuple(x.shape)}")
        n = x.shape[0]
        out = _model_major(x.reshape(n, self.B, -1).transpose(0, 1), self.weight, self.bias)  # [B, N, out]
        return out.transpose(0, 1).reshape(n, -1)

    def extra_repr(self) -> str:
        return f"B={self.B}, weight={tuple(self.weight.shape)}"
