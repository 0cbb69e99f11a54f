"""A whole training step replayed as one CUDA graph: forward, loss, backward, optimizer step and the
gradient scaler's unscale, inf check and scale update.

Below B=32 a fused array's step on an H100 is bound by the host launching its kernels (56% GPU
utilisation at B=16), and so is a single small model's step. Capturing the step once and replaying it
launches the whole step with one call. The step trains exactly as before: the same kernels run on the
same tensors. What a graph needs, and how it is met here:
- static inputs: each step copies its batch into tensors the graph reads (a device copy, no host work);
- no host synchronisation inside the step: the fused array's FusedSGD and torch's fused SGD take the
  GradScaler's scale and inf flag into their kernels (`_step_supports_amp_scaling`), so the scaler never
  reads a flag back to the host; both only do so while starting their momentum buffers, which happens in
  the eager warm-up steps before capture;
- one-time work (cuDNN's algorithm search, the conv forms' timing, lazy optimizer state) is done by the
  warm-up steps, run on a side stream as torch.cuda.graph requires.
The loss a replay returns is the graph's own output tensor, overwritten by the next replay.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

GRAPH_CHOICES = ("auto", "on", "off")
EAGER_STEPS_BEFORE_CAPTURE = 3  # warm-up steps on the side stream: lazy state, algorithm searches


def use_graphs(choice: str, device: torch.device | str) -> bool:
    """Whether a step is graphed: `auto` where CUDA is, `on` (an error without CUDA), `off` never."""
    if choice not in GRAPH_CHOICES:
        raise ValueError(f"graphs must be one of {', '.join(GRAPH_CHOICES)}, got {choice!r}")
    on_cuda = torch.device(device).type == "cuda"
    if choice == "on" and not on_cuda:
        raise ValueError(f"graphs 'on' replays CUDA graphs and needs a CUDA device, not {device}")
    return choice == "on" or (choice == "auto" and on_cuda)


class GraphedStep:
    """`train_step` captured as one CUDA graph after eager warm-up steps on `warmup_batches` (at least
    EAGER_STEPS_BEFORE_CAPTURE); `step(x, y)` replays it on x, y. Capturing runs no step: the models
    have trained on the warm-up batches only."""

    def __init__(
        self,
        train_step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        warmup_batches: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> None:
        if len(warmup_batches) < EAGER_STEPS_BEFORE_CAPTURE:
            raise ValueError(f"a graph is captured after {EAGER_STEPS_BEFORE_CAPTURE} eager steps at least")
        x, y = warmup_batches[0]
        self.static_x, self.static_y = x.clone(), y.clone()  # clone keeps x's strides (channels-last)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for x, y in warmup_batches:  # through the static tensors, as the replays will read them
                self.static_x.copy_(x)
                self.static_y.copy_(y)
                train_step(self.static_x, self.static_y)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        # zero_grad(set_to_none) inside the step: gradients are allocated in the graph's own memory pool
        with torch.cuda.graph(self.graph):
            self.static_loss = train_step(self.static_x, self.static_y)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.static_x.copy_(x, non_blocking=True)
        self.static_y.copy_(y, non_blocking=True)
        self.graph.replay()
        return self.static_loss
