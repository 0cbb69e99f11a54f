"""The study's models: the real architectures with seeded random weights, so nothing is downloaded.

DeiT-T/S/B come from timm (`deit_{tiny,small,base}_patch16_224`, `pretrained=False`), BERT-B/L from
transformers (`BertForSequenceClassification` with 2 labels, its config written out here rather than
fetched from the hub). Latency and energy depend on the architecture and the input shape, not on the
weights' values, so random weights measure the same work as trained ones.

timm and transformers are imported when a model is built, so the rest of the package (tables, plots)
works without them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..errors import GpureproError

IMAGE_SIZE = 224  # DeiT's input resolution (patch16_224)
VIT_MODELS = {
    "deit-t": "deit_tiny_patch16_224",
    "deit-s": "deit_small_patch16_224",
    "deit-b": "deit_base_patch16_224",
}


@dataclass(frozen=True)
class BertSize:
    hidden: int
    layers: int
    heads: int

    @property
    def intermediate(self) -> int:
        return 4 * self.hidden


BERT_MODELS = {"bert-b": BertSize(768, 12, 12), "bert-l": BertSize(1024, 24, 16)}
BERT_LABELS = 2
BERT_MAX_SEQ_LEN = 512  # BERT's learned position embeddings


@dataclass(frozen=True)
class BuiltModel:
    """A model in eval mode on its device, its input, and a forward function returning one tensor."""

    name: str  # the study's name, e.g. deit-b
    architecture: str  # the library's name, e.g. deit_base_patch16_224
    library: str  # e.g. "timm 1.0.31"
    module: torch.nn.Module
    example: torch.Tensor  # the (static) input every timed inference uses
    forward: Callable[[torch.Tensor], torch.Tensor]

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.module.parameters())


def _seeded(seed: int) -> torch.Generator:
    torch.manual_seed(seed)  # weight initialisation draws from the global generator
    return torch.Generator().manual_seed(seed)


def _init_device(device: torch.device | str) -> torch.device:
    """Weights are initialised on the CPU (the same values whichever GPU measures) and then moved; on
    the meta device (shapes only, for tests and parameter counts) they are never materialised."""
    return torch.device("meta" if torch.device(device).type == "meta" else "cpu")


def build_vit(name: str, batch_size: int, device: torch.device | str, seed: int = 0) -> BuiltModel:
    """DeiT from timm with random weights, and a seeded batch of 3x224x224 images."""
    if name not in VIT_MODELS:
        raise GpureproError(f"unknown DeiT model '{name}'; known: {', '.join(VIT_MODELS)}")
    import timm

    generator = _seeded(seed)
    with _init_device(device):
        module = timm.create_model(VIT_MODELS[name], pretrained=False).eval()
    images = torch.randn((batch_size, 3, IMAGE_SIZE, IMAGE_SIZE), generator=generator)
    return BuiltModel(
        name,
        VIT_MODELS[name],
        f"timm {timm.__version__}",
        module.to(device),
        images.to(device),
        module,
    )


def bert_config(name: str):  # -> transformers.BertConfig
    """BERT-base (768 hidden, 12 layers, 12 heads) or BERT-large (1024, 24, 16), written out by hand."""
    from transformers import BertConfig

    size = BERT_MODELS[name]
    return BertConfig(
        vocab_size=30522,
        hidden_size=size.hidden,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        intermediate_size=size.intermediate,
        max_position_embeddings=BERT_MAX_SEQ_LEN,
        num_labels=BERT_LABELS,
    )


def build_bert(
    name: str, batch_size: int, seq_len: int, device: torch.device | str, seed: int = 0
) -> BuiltModel:
    """BertForSequenceClassification (2 labels) with random weights, and seeded random token ids.

    The input is token ids alone: no padding, so no attention mask (the same work as a mask of ones,
    and no host-side check of the mask, which CUDA graph capture would not allow)."""
    if name not in BERT_MODELS:
        raise GpureproError(f"unknown BERT model '{name}'; known: {', '.join(BERT_MODELS)}")
    if not 1 <= seq_len <= BERT_MAX_SEQ_LEN:
        raise GpureproError(f"sequence length {seq_len} is outside BERT's 1..{BERT_MAX_SEQ_LEN} positions")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub: the config is built here
    import transformers
    from transformers import BertForSequenceClassification

    config = bert_config(name)
    generator = _seeded(seed)
    with _init_device(device):
        module = BertForSequenceClassification(config).eval()
    tokens = torch.randint(0, config.vocab_size, (batch_size, seq_len), generator=generator)

    def forward(input_ids: torch.Tensor) -> torch.Tensor:
        return module(input_ids=input_ids).logits

    return BuiltModel(
        name,
        "BertForSequenceClassification",
        f"transformers {transformers.__version__}",
        module.to(device),
        tokens.to(device),
        forward,
    )
