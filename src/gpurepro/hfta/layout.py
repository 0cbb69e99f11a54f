"""The merged layout: B models' activations as one tensor with their channels side by side.

The merged strategy of FusedArray runs the architecture's forward once on [N, B*C, *space], model b's
channels at b*C to (b+1)*C, and each fused op (ops/) reads the B models' stacked [B, K, ...] parameters
and buffers as [B*K, ...], the same order. These are the conversions to and from that layout; all are
views where the memory allows (a channels-last array's arranged images, its convolution weights).
"""

from __future__ import annotations

from torch import Tensor


def merge_models(x: Tensor) -> Tensor:
    """The models' inputs [B, N, C, *space] as one [N, B*C, *space] (a view for a channels-last array's
    arranged images, [N, H, W, B, C] in memory)."""
    x = x.transpose(0, 1)
    return x.reshape(x.shape[0], -1, *x.shape[3:])


def split_models(y: Tensor, B: int) -> Tensor:
    """A merged output [N, B*K, *rest] as the models' outputs [B, N, K, *rest]."""
    return y.reshape(y.shape[0], B, -1, *y.shape[2:]).transpose(0, 1)


def stacked_as_merged(t: Tensor | None) -> Tensor | None:
    """Stacked [B, K, ...] as [B*K, ...]: a view (a batch norm's running statistics updated in place
    reach the stacked buffers; a channels-last array's conv weights stay channels-last)."""
    return None if t is None else t.flatten(0, 1)
