"""Small workloads for the HFTA tests, and seeded models and batches of them: 16x16 images, 16 tokens
from a 1000-word vocabulary keep the tests quick."""

from __future__ import annotations

import torch
from torch import nn

from gpurepro.hfta import workload

SMALL = {
    "resnet18": workload("resnet18", image_size=16, num_classes=10),
    "transformer": workload("transformer", seq_len=16, vocab_size=1000),
    "mlp": workload("mlp"),
}


def models_of(name: str, B: int, seed: int = 0) -> list[nn.Module]:
    torch.manual_seed(seed)
    return [SMALL[name].make_model() for _ in range(B)]


def stacked_batch(name: str, B: int, batch: int = 4, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    pairs = [SMALL[name].make_batch(batch, generator) for _ in range(B)]
    return torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])
