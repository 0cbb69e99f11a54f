"""The model, loss and optimiser of NVIDIA's ResNet-50 v1.5 training recipe (DeepLearningExamples,
PyTorch), on torchvision's ResNet-50, which is v1.5: the stride-2 of each downsampling bottleneck sits in
its 3x3 convolution, not its first 1x1.

Recipe values from DeepLearningExamples' resnet50 configuration: SGD, momentum 0.875, weight decay
1/32768, learning rate 0.256 per 256 images of global batch, label smoothing 0.1. The learning-rate
schedule (warm-up, cosine decay over epochs) is left out: a throughput run lasts seconds, not epochs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torchvision import models

LABEL_SMOOTHING = 0.1
MOMENTUM = 0.875
WEIGHT_DECAY = 1 / 32768
LR_PER_256_IMAGES = 0.256

MODELS: dict[str, Callable[..., nn.Module]] = {"resnet50": models.resnet50}


def build_model(name: str, num_classes: int) -> nn.Module:
    """The named model with random weights (nothing is downloaded)."""
    return MODELS[name](weights=None, num_classes=num_classes)


def loss_function() -> nn.Module:
    return nn.CrossEntropyLoss(label_smoothing=LABEL_SMOOTHING)


def optimizer(model: nn.Module, global_batch: int) -> torch.optim.Optimizer:
    """SGD with the recipe's momentum and weight decay, the learning rate scaled with the global batch."""
    lr = LR_PER_256_IMAGES * global_batch / 256
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
