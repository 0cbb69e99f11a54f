"""The fused-vs-separate agreement check: do B fused models follow the trajectories of B models trained
alone? Public API of the library (the tests hold it to these tolerances; benchmarks/hfta_fusion_check.py
prints the figures), for any workload spec, device, dtype, strategy and convolution form.

`compare_training` makes B models of a workload (seeded), trains copies of them separately (plain
torch.optim.SGD with momentum or torch.optim.AdamW, one optimizer per model) and fused (FusedArray and
fused_optimizer) from the same initial weights, on the same batches (model b gets its own batch each
step), with per-model learning rates and weight decays that differ, for a few steps; then it measures,
over every tensor, how far the unfused array ends from the separately trained models: parameters,
losses (every step), batch-norm buffers (running_mean, running_var; num_batches_tracked must be equal).

How differences are measured: per tensor, max |fused - separate| (absolute) and that divided by the
tensor's largest |separate| value (relative to the tensor's scale: an elementwise relative difference
is meaningless for elements that pass near zero). Each figure is the maximum over tensors (and, for
losses, over steps and models).

Tolerances, and why. Fused and separate training do the same arithmetic in a different order (a
grouped convolution, a batched matmul, a broadcast optimizer update may sum or round differently from
the per-model op), so they differ by rounding, and training carries those differences forward and
grows them. Two things grow them fast. Batch norm divides by a batch standard deviation: ResNet-18 on
16x16 images has 1x1 feature maps in its last stages, so a statistic over 4 values per channel, nearly
singular. Adam divides each update by the root of its second moment, so for an element whose gradient
is near eps (1e-8) a rounding-level gradient difference becomes a visible difference in the update.

- float64 (the tests): rounding is 1e-16, so even amplified it stays small. Measured after 3 steps on
  the CPU, B from 1 to 8: at most 4e-7 relative for parameters (ResNet-18 with AdamW; with SGD 2e-10;
  the transformer and the MLP 1e-11), 4e-9 for buffers, 1e-9 for losses. The tolerance, 2e-6
  relative for parameters and buffers and 1e-8 for losses, sits above that and far below what any
  real error does: a learning rate given to the wrong model, a missed weight-decay or momentum
  term, batch-norm statistics taken over the wrong models all move values by 1e-5 relative or more
  within 3 steps.
- float32: rounding is 6e-8. SGD on the transformer and the MLP stays within a few 1e-6 relative
  (tolerance 1e-5 for parameters and buffers, 1e-6 for losses). ResNet-18 and anything under AdamW
  can differ by 1e-3 relative or more after a few steps with no error anywhere (the same code agrees
  in float64): float32 itself is that far from exact there. At initialisation, ResNet-18's float32
  weight gradients (3x32x32 images, batch 8) differ from float64's by up to 1.4% relative when
  computed model by model, 1.7% when fused. `float64_reference=True` measures float32's own error
  next to the fused-vs-separate difference, the yardstick benchmarks/hfta_fusion_check.py prints: on
  the CPU (B 1 to 8, 3 steps) the fused-vs-separate difference was never more than about that size.

num_batches_tracked must be equal in every case. On a GPU the comparison runs with TF32 off, so both
sides compute in float32.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .errors import FusionError
from .fused import FusedArray, fused_loss
from .optim import OPTIMIZERS, fused_optimizer, per_model
from .workloads import WorkloadSpec

MOMENTUM = 0.9
BASE_LR = {"sgd": 0.01, "adamw": 1e-3}
BASE_WEIGHT_DECAY = 0.01


@dataclass(frozen=True)
class Tolerance:
    """Largest differences accepted, relative to each tensor's scale (see the module docstring)."""

    parameters: float
    buffers: float
    losses: float


TOLERANCES = {
    torch.float64: Tolerance(parameters=2e-6, buffers=2e-6, losses=1e-8),
    # float32: holds for SGD on well-conditioned workloads only (see the module docstring)
    torch.float32: Tolerance(parameters=1e-5, buffers=1e-5, losses=1e-6),
}


@dataclass(frozen=True)
class Difference:
    """The largest difference over a set of tensors: absolute, relative to the tensor's scale, and the
    name of the tensor with the largest relative difference."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: str = ""

    def worse(self, other: Difference) -> Difference:
        return Difference(
            max(self.max_abs, other.max_abs),
            max(self.max_rel, other.max_rel),
            # the first tensor compared names the set until another differs more (all may be equal)
            other.worst if other.max_rel > self.max_rel or not self.worst else self.worst,
        )


def difference(name: str, fused: Tensor, separate: Tensor) -> Difference:
    a, b = fused.detach().double().cpu(), separate.detach().double().cpu()
    if a.shape != b.shape:
        raise FusionError(f"'{name}' has shape {tuple(a.shape)} fused and {tuple(b.shape)} separate")
    if a.numel() == 0:
        return Difference(worst=name)
    max_abs = (a - b).abs().max().item()
    scale = b.abs().max().item()
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    return Difference(max_abs, max_rel, name)


@dataclass(frozen=True)
class Agreement:
    """What compare_training measured: the largest differences between the fused and the separately
    trained models, and with a float64 reference, the run's dtype's own error."""

    workload: str
    B: int
    optimizer: str
    steps: int
    device: str
    dtype: str
    parameters: Difference
    losses: Difference
    buffers: Difference  # float buffers (batch-norm running statistics); zeros if the model has none
    counters_equal: bool  # integer buffers (num_batches_tracked) equal in every model
    # with a float64 reference: separate training in the run's dtype against separate training in float64
    reference_parameters: Difference | None = None
    reference_losses: Difference | None = None

    def failures(self, tolerance: Tolerance | None = None) -> list[str]:
        """What is outside `tolerance` (default: TOLERANCES for the run's dtype), in words; empty if
        the fused and separate runs agree."""
        tolerance = tolerance or TOLERANCES[getattr(torch, self.dtype)]
        out = []
        for what in ("parameters", "buffers", "losses"):
            diff: Difference = getattr(self, what)
            limit = getattr(tolerance, what)
            if not diff.max_rel <= limit:
                out.append(
                    f"{what}: '{diff.worst}' differs by {diff.max_rel:.3g} relative "
                    f"({diff.max_abs:.3g} absolute), above {limit:g}"
                )
        if not self.counters_equal:
            out.append("integer buffers (num_batches_tracked) differ")
        return out

    def row(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "B": self.B,
            "optimizer": self.optimizer,
            "steps": self.steps,
            "device": self.device,
            "dtype": self.dtype,
            "param_max_abs": self.parameters.max_abs,
            "param_max_rel": self.parameters.max_rel,
            "loss_max_abs": self.losses.max_abs,
            "loss_max_rel": self.losses.max_rel,
            "buffer_max_abs": self.buffers.max_abs,
            "buffer_max_rel": self.buffers.max_rel,
            "counters_equal": self.counters_equal,
            "separate_vs_float64_param_max_rel": _rel(self.reference_parameters),
            "separate_vs_float64_loss_max_rel": _rel(self.reference_losses),
        }


def _rel(difference: Difference | None) -> float:
    return math.nan if difference is None else difference.max_rel


def default_hyperparameters(optimizer: str, B: int) -> tuple[list[float], list[float]]:
    """Per-model learning rates and weight decays that differ between models, so that a mix-up shows:
    model b gets base x (1 + b / B) of each (from base up to twice base). The bases are moderate rates
    for small batches (SGD 0.01, AdamW 1e-3; weight decay 0.01): larger ones make training itself
    chaotic, which would measure the training's sensitivity rather than the fusion."""
    if optimizer not in OPTIMIZERS:
        raise FusionError(f"unknown optimizer {optimizer!r}; known: {', '.join(OPTIMIZERS)}")
    spread = [1 + b / B for b in range(B)]
    return [BASE_LR[optimizer] * s for s in spread], [BASE_WEIGHT_DECAY * s for s in spread]


@contextlib.contextmanager
def float32_matmuls() -> Iterator[None]:
    """TF32 off for matmuls and cuDNN convolutions (restored after): both sides compute in float32."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def _separate_optimizer(model: nn.Module, kind: str, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM, weight_decay=weight_decay)
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)


def _compare_states(fused: Sequence[nn.Module], separate: Sequence[nn.Module]) -> tuple:
    parameters, buffers, counters_equal = Difference(), Difference(), True
    for b, (f, s) in enumerate(zip(fused, separate, strict=True)):
        s_params = dict(s.named_parameters())
        for name, p in f.named_parameters():
            parameters = parameters.worse(difference(f"model {b} {name}", p, s_params[name]))
        s_buffers = dict(s.named_buffers())
        for name, t in f.named_buffers():
            if t.is_floating_point():
                buffers = buffers.worse(difference(f"model {b} {name}", t, s_buffers[name]))
            else:
                counters_equal &= torch.equal(t.cpu(), s_buffers[name].cpu())
    return parameters, buffers, counters_equal


def _train_separately(
    initial: Sequence[nn.Module],
    batches: Sequence[tuple[Tensor, Tensor]],
    optimizer: str,
    lrs: Sequence[float],
    decays: Sequence[float],
    device: torch.device,
    dtype: torch.dtype,
) -> tuple[list[nn.Module], Tensor]:
    """Copies of `initial` in `dtype`, each trained with its own torch.optim optimizer; and the losses
    [steps, B]."""
    models = [copy.deepcopy(m).to(device=device, dtype=dtype) for m in initial]
    optimizers = [
        _separate_optimizer(m, optimizer, lr_b, wd_b)
        for m, lr_b, wd_b in zip(models, lrs, decays, strict=True)
    ]
    losses = torch.zeros(len(batches), len(models), dtype=torch.float64)
    for step, (inputs, targets) in enumerate(batches):
        inputs = _as(inputs, dtype)
        for b, (model, opt) in enumerate(zip(models, optimizers, strict=True)):
            opt.zero_grad()
            loss = F.cross_entropy(model(inputs[b]), targets[b])
            loss.backward()
            opt.step()
            losses[step, b] = loss.item()
    return models, losses


def _as(inputs: Tensor, dtype: torch.dtype) -> Tensor:
    """Float inputs in the run's dtype; token ids stay integers."""
    return inputs.to(dtype) if inputs.is_floating_point() else inputs


def compare_training(
    spec: WorkloadSpec,
    B: int,
    optimizer: str,
    *,
    steps: int = 3,
    batch: int = 4,
    device: torch.device | str = "cpu",
    seed: int = 0,
    lr: float | Sequence[float] | None = None,
    weight_decay: float | Sequence[float] | None = None,
    dtype: torch.dtype = torch.float32,
    float64_reference: bool = False,
    channels_last: bool = False,
    strategy: str = "auto",
    conv_form: str = "auto",
) -> Agreement:
    """Train B models of `spec` separately and fused for `steps` steps and compare them (see above).
    `lr` and `weight_decay` default to default_hyperparameters(optimizer, B).

    With `float64_reference`, the separate training is run once more in float64 and the run's own
    separate training compared with it: the error `dtype` itself makes, the yardstick for the fused
    run's difference (if fusing adds no error, fused-vs-separate is of the order of this).
    `channels_last`, `strategy` and `conv_form` are FusedArray's (the channels-last layout of image
    workloads; merged or vmap; grouped or matmul convolutions)."""
    default_lrs, default_decays = default_hyperparameters(optimizer, B)
    lrs = per_model("lr", default_lrs if lr is None else lr, B)
    decays = per_model("weight_decay", default_decays if weight_decay is None else weight_decay, B)
    device = torch.device(device)
    torch.manual_seed(seed)
    initial = [spec.make_model() for _ in range(B)]
    generator = torch.Generator().manual_seed(seed + 1)
    batches = []
    for _ in range(steps):
        pairs = [spec.make_batch(batch, generator, device) for _ in range(B)]
        batches.append((torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])))

    with float32_matmuls():
        separate, separate_losses = _train_separately(initial, batches, optimizer, lrs, decays, device, dtype)
        array = FusedArray(initial, channels_last=channels_last, strategy=strategy, conv_form=conv_form).to(
            device=device, dtype=dtype
        )
        fused_opt = fused_optimizer(
            array, optimizer, lrs, momentum=MOMENTUM, weight_decay=decays, betas=(0.9, 0.999), eps=1e-8
        )
        fused_losses = torch.zeros(steps, B, dtype=torch.float64)
        for step, (inputs, targets) in enumerate(batches):
            fused_opt.zero_grad()
            losses = fused_loss(array(_as(inputs, dtype)), targets)
            losses.sum().backward()
            fused_opt.step()
            fused_losses[step] = losses.detach().double().cpu()
        reference = None
        if float64_reference:
            exact, exact_losses = _train_separately(
                initial, batches, optimizer, lrs, decays, device, torch.float64
            )
            reference = (
                _compare_states(separate, exact)[0],
                difference("losses", separate_losses, exact_losses),
            )

    parameters, buffers, counters_equal = _compare_states(array.unfuse(), separate)
    return Agreement(
        spec.name,
        B,
        optimizer,
        steps,
        str(device),
        str(dtype).removeprefix("torch."),
        parameters,
        difference("losses", fused_losses, separate_losses),
        buffers,
        counters_equal,
        *(reference or (None, None)),
    )
