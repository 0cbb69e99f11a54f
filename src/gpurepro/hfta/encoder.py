"""A small BERT-like encoder classifier written for vmap.

Token and learned position embeddings with LayerNorm, post-LN encoder layers (self-attention, GELU feed
forward), a tanh pooler on the first token and a linear classifier: BERT's structure at a small size.

Why not nn.TransformerEncoder or transformers' BERT: under vmap they take paths that fuse badly.
nn.MultiheadAttention projects inside a Python function that FusedArray's autocast repair cannot reach
(so its projections would stay fp32 under AMP), and in eval mode nn.TransformerEncoderLayer's fast path
calls an op with no batching rule (vmap then loops over the models). BERT's mask helpers branch on the
mask's values. Here every projection is an nn.Linear and attention is F.scaled_dot_product_attention,
both of which batch.

There is no dropout: with it, a fused array and B separately trained models draw different masks and
can no longer be compared step by step; the training work dropout adds (a few elementwise ops) is small
next to the matmuls. FusedArray still runs models that have dropout, each with its own masks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not a multiple of {heads} heads")
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def forward(self, x: Tensor) -> Tensor:  # x: [N, L, hidden]
        n, length, hidden = x.shape

        def split(t: Tensor) -> Tensor:  # -> [N, heads, L, head_dim]
            return t.view(n, length, self.heads, hidden // self.heads).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        context = F.scaled_dot_product_attention(q, k, v)
        return self.output(context.transpose(1, 2).reshape(n, length, hidden))


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float) -> None:
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: Tensor) -> Tensor:
        x = self.attention_norm(x + self.attention(x))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class EncoderClassifier(nn.Module):
    """Token ids [N, L] -> logits [N, num_classes]."""

    def __init__(
        self,
        *,
        vocab_size: int,
        max_positions: int,
        hidden: int,
        layers: int,
        heads: int,
        intermediate: int,
        num_classes: int,
        eps: float = 1e-12,  # BERT's LayerNorm epsilon
    ) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, intermediate, eps) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        length = tokens.shape[-1]
        if length > self.positions.num_embeddings:
            raise ValueError(f"sequence of {length} tokens; the model has {self.positions.num_embeddings}")
        # positions as a slice of the table, not an arange index: no tensor is made inside the forward
        x = self.embedding_norm(self.tokens(tokens) + self.positions.weight[:length])
        for layer in self.layers:
            x = layer(x)
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))
