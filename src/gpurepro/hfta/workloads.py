"""The three workloads of the fusion study: what their models are and how their random data is made.

- resnet18: torchvision's ResNet-18 (BatchNorm), by default 200 classes on 3x64x64 images, the shape of
  Tiny-ImageNet, as in HFTA's image-classification benchmarks.
- transformer: a small BERT-like encoder classifier (see encoder.py): 4 layers, hidden 256, 4 heads,
  feed-forward 1024, BERT's vocabulary size (30522), 2 classes, 128 tokens.
- mlp: three linear layers (784 -> 512 -> 512 -> classes) with ReLU on flat 28x28 inputs, 10 classes.

Models are initialised from torch's global generator (seed it for reproducible weights); data comes
from the generator the caller passes, so weights and data can be seeded apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .encoder import EncoderClassifier
from .errors import FusionError

WORKLOAD_NAMES = ("resnet18", "transformer", "mlp")

DEFAULT_CLASSES = {"resnet18": 200, "transformer": 2, "mlp": 10}
BERT_VOCAB = 30522
TRANSFORMER = {"hidden": 256, "layers": 4, "heads": 4, "intermediate": 1024}
MLP_INPUT = 28 * 28
MLP_HIDDEN = 512


@dataclass(frozen=True)
class WorkloadSpec:
    """What a study needs to make the models and random batches of one workload."""

    name: str
    sample_shape: tuple[int, ...]  # one input sample: (3, H, W) images, (784,) vectors, (L,) tokens
    input_dtype: torch.dtype  # float32 images and vectors, int64 token ids
    num_classes: int
    build: Callable[[], nn.Module] = field(repr=False, compare=False)
    vocab_size: int | None = None  # token workloads: ids are drawn from [0, vocab_size)
    description: str = ""

    def make_model(self) -> nn.Module:
        """One fresh model in training mode, its weights drawn from torch's global generator."""
        return self.build().train()

    def make_batch(
        self, batch: int, generator: torch.Generator, device: torch.device | str = "cpu"
    ) -> tuple[Tensor, Tensor]:
        """(inputs [batch, *sample_shape], int64 targets [batch]), random from `generator`, on `device`.

        Drawn on the generator's device and then moved, so one seed gives the same batch whichever
        device trains on it."""
        if batch < 1:
            raise FusionError(f"batch size must be at least 1, got {batch}")
        on = generator.device
        if self.input_dtype.is_floating_point:
            inputs = torch.randn((batch, *self.sample_shape), generator=generator, device=on)
            inputs = inputs.to(self.input_dtype)
        else:
            assert self.vocab_size is not None
            inputs = torch.randint(
                0, self.vocab_size, (batch, *self.sample_shape), generator=generator, device=on
            ).to(self.input_dtype)
        targets = torch.randint(0, self.num_classes, (batch,), generator=generator, device=on)
        return inputs.to(device), targets.to(device)


def mlp(num_classes: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(MLP_INPUT, MLP_HIDDEN),
        nn.ReLU(),
        nn.Linear(MLP_HIDDEN, MLP_HIDDEN),
        nn.ReLU(),
        nn.Linear(MLP_HIDDEN, num_classes),
    )


def resnet18(num_classes: int) -> nn.Module:
    import torchvision  # imported when a ResNet is built: the rest of the library works without it

    return torchvision.models.resnet18(weights=None, num_classes=num_classes)


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FusionError(f"{name} must be a positive integer, got {value!r}")
    return value


def workload(
    name: str,
    *,
    image_size: int = 64,
    num_classes: int | None = None,
    seq_len: int = 128,
    vocab_size: int = BERT_VOCAB,
) -> WorkloadSpec:
    """The spec of workload `name` (one of WORKLOAD_NAMES). `image_size` applies to resnet18, `seq_len`
    and `vocab_size` to transformer; `num_classes` defaults to the workload's own (200, 2, 10)."""
    if name not in WORKLOAD_NAMES:
        raise FusionError(f"unknown workload {name!r}; known workloads: {', '.join(WORKLOAD_NAMES)}")
    classes = _positive("num_classes", DEFAULT_CLASSES[name] if num_classes is None else num_classes)
    if name == "resnet18":
        size = _positive("image_size", image_size)
        return WorkloadSpec(
            name,
            (3, size, size),
            torch.float32,
            classes,
            build=lambda: resnet18(classes),
            description=f"torchvision ResNet-18, {classes} classes, 3x{size}x{size} images",
        )
    if name == "transformer":
        length = _positive("seq_len", seq_len)
        vocab = _positive("vocab_size", vocab_size)
        return WorkloadSpec(
            name,
            (length,),
            torch.int64,
            classes,
            build=lambda: EncoderClassifier(
                vocab_size=vocab, max_positions=length, num_classes=classes, **TRANSFORMER
            ),
            vocab_size=vocab,
            description=(
                f"BERT-like encoder, {TRANSFORMER['layers']} layers, hidden {TRANSFORMER['hidden']}, "
                f"{TRANSFORMER['heads']} heads, vocabulary {vocab}, {classes} classes, {length} tokens"
            ),
        )
    return WorkloadSpec(
        name,
        (MLP_INPUT,),
        torch.float32,
        classes,
        build=lambda: mlp(classes),
        description=f"MLP {MLP_INPUT}-{MLP_HIDDEN}-{MLP_HIDDEN}-{classes}, ReLU",
    )
