"""The fused optimizers (hfta/optim.py) on the CPU: per-model learning rates and weight decays and their
state; FusedSGD follows torch.optim.SGD with momentum, dampening, Nesterov and weight decay, with all
models sharing their hyperparameters (one kernel call on the stacked tensors) and with models that do
not (calls on their slices), under a GradScaler too; a step with an overflow in one model is skipped for
all."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from gpurepro.hfta import FusedArray, FusedSGD, fused_loss, fused_optimizer

from .small import models_of, stacked_batch


def test_per_model_learning_rates_and_optimizer_state() -> None:
    array = FusedArray(models_of("mlp", 3))
    optimizer = fused_optimizer(array, "sgd", [0.1, 0.2, 0.3], momentum=0.9, weight_decay=[0.0, 0.1, 0.0])
    assert isinstance(optimizer, torch.optim.Optimizer)
    assert optimizer.param_groups[0]["lr"] == (0.1, 0.2, 0.3)
    for p in array.parameters():
        p.grad = torch.ones_like(p)
    bias = array.stacked[0].bias  # the first layer's bias, [3, 512]
    bias_before = bias.detach().clone()
    optimizer.step()
    # one step from a zero momentum buffer: p - lr * (grad + wd * p), model by model
    for b, (lr, wd) in enumerate([(0.1, 0.0), (0.2, 0.1), (0.3, 0.0)]):
        torch.testing.assert_close(bias[b], bias_before[b] - lr * (1 + wd * bias_before[b]))
    assert set(optimizer.state_dict()["state"][0]) == {"momentum_buffer"}
    optimizer.zero_grad()
    assert all(p.grad is None for p in array.parameters())
    optimizer.param_groups[0]["lr"] = 0.5  # a plain float, as a scheduler may set, applies to all
    for p in array.parameters():
        p.grad = torch.zeros_like(p)
    before = bias.detach().clone()
    optimizer.step()  # momentum 0.9 carries last step's (1 + wd * p) at the new rate
    for b, wd in enumerate([0.0, 0.1, 0.0]):
        expected = before[b] - 0.5 * (0.9 * (1 + wd * bias_before[b]) + wd * before[b])
        torch.testing.assert_close(bias[b], expected)


def test_grad_scaler_skips_the_step_of_every_model_on_overflow() -> None:
    array = FusedArray(models_of("mlp", 2))
    inputs, targets = stacked_batch("mlp", 2)
    optimizer = fused_optimizer(array, "adamw", 1e-3)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(fused_loss(array(inputs), targets).sum()).backward()
    next(array.parameters()).grad[1, 0, 0] = float("inf")  # one element of model 1 overflows
    before = copy.deepcopy(array.state_dict())
    scaler.step(optimizer)
    scaler.update()
    assert all(torch.equal(before[k], v) for k, v in array.state_dict().items())
    assert scaler.get_scale() < 65536.0  # the scale backed off


@pytest.mark.parametrize(
    ("lrs", "decays", "dampening", "nesterov"),
    [
        ([0.1] * 3, [0.01] * 3, 0.0, True),  # shared: one call on the stacked tensors
        ([0.1] * 3, [0.0] * 3, 0.5, False),
        ([0.1, 0.2, 0.1], [0.0, 0.01, 0.0], 0.0, False),  # two groups of models, on their slices
    ],
)
def test_fused_sgd_follows_torch_sgd(lrs: list, decays: list, dampening: float, nesterov: bool) -> None:
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2)).double() for _ in range(3)]
    array = FusedArray(models)
    fused = FusedSGD(
        array.parameters(), 3, lrs, momentum=0.9, dampening=dampening, weight_decay=decays, nesterov=nesterov
    )
    references = [
        torch.optim.SGD(
            m.parameters(), lr=lr, momentum=0.9, dampening=dampening, weight_decay=wd, nesterov=nesterov
        )
        for m, lr, wd in zip(models, lrs, decays, strict=True)
    ]
    for step in range(3):
        inputs = torch.randn(3, 6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(step))
        fused.zero_grad()
        array(inputs).square().sum().backward()
        fused.step()
        for b, (model, optimizer) in enumerate(zip(models, references, strict=True)):
            optimizer.zero_grad()
            model(inputs[b]).square().sum().backward()
            optimizer.step()
    for b, model in enumerate(models):
        for (name, stacked), mine in zip(array.stacked.named_parameters(), model.parameters(), strict=True):
            torch.testing.assert_close(stacked[b], mine, msg=f"model {b} {name}")


@pytest.mark.parametrize("lrs", [[0.1] * 3, [0.1, 0.2, 0.1]])
def test_fused_sgd_under_a_grad_scaler_follows_torch_sgd(lrs: list) -> None:
    """The scaler hands FusedSGD its scale and inf flag. Step 0 overflows in every model: it is skipped
    and starts no momentum buffer (with dampening, a buffer started from a skipped step's gradient, or
    left unset, would differ from torch.optim.SGD's); later steps unscale inside the kernel."""
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2)) for _ in range(3)]
    array = FusedArray(models)
    fused = FusedSGD(array.parameters(), 3, lrs, momentum=0.9, dampening=0.3)
    assert FusedSGD._step_supports_amp_scaling
    references = [
        torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9, dampening=0.3)
        for m, lr in zip(models, lrs, strict=True)
    ]
    scalers = [torch.amp.GradScaler("cpu", init_scale=1024.0) for _ in range(4)]
    for step in range(4):
        inputs = torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(step))
        overflow = float("inf") if step == 0 else 1.0
        fused.zero_grad()
        scalers[0].scale(array(inputs).square().sum() * overflow).backward()
        scalers[0].step(fused)
        scalers[0].update()
        for b, (model, optimizer) in enumerate(zip(models, references, strict=True)):
            optimizer.zero_grad()
            scalers[b + 1].scale(model(inputs[b]).square().sum() * overflow).backward()
            scalers[b + 1].step(optimizer)
            scalers[b + 1].update()
        if step == 0:
            assert not any("momentum_buffer" in state for state in fused.state.values())
            assert scalers[0].get_scale() == 512.0
    for b, model in enumerate(models):
        for (name, stacked), mine in zip(array.stacked.named_parameters(), model.parameters(), strict=True):
            torch.testing.assert_close(stacked[b], mine, msg=f"model {b} {name}")
