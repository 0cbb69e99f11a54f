"""B fused models train exactly as B models trained separately with torch.optim (parameters, losses,
batch-norm buffers), for ResNet-18, the transformer and the MLP, SGD with momentum and AdamW, several B
including 1, per-model learning rates and weight decays that differ, merged and under vmap.

Agreement is checked in float64, where rounding cannot hide an error, with the tolerances of
gpurepro.hfta.agreement (its docstring says what they are and why), and in float32 where float32
agreement is expected (SGD on the transformer and the MLP); a real error is far outside them."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from gpurepro.hfta import FusedArray, fused_loss, fused_optimizer
from gpurepro.hfta.agreement import TOLERANCES, compare_training, difference

from .small import SMALL, models_of, stacked_batch

# every workload with both optimizers and with B = 1 and B > 1; the MLP, cheap, in every combination
CASES = [
    ("resnet18", "sgd", 1),
    ("resnet18", "adamw", 2),
    ("transformer", "sgd", 3),
    ("transformer", "adamw", 1),
    *[("mlp", optimizer, B) for optimizer in ("sgd", "adamw") for B in (1, 4)],
]


@pytest.mark.parametrize(("name", "optimizer", "B"), CASES)
def test_fused_training_matches_separate_training(name: str, optimizer: str, B: int) -> None:
    """ResNet-18 and the MLP run merged (the default where the architecture allows), the transformer
    under vmap; the next test trains the first two under vmap too."""
    agreement = compare_training(SMALL[name], B, optimizer, steps=3, batch=4, dtype=torch.float64)
    assert agreement.failures() == []
    if name == "resnet18":  # batch norm's running statistics were compared, counters included
        assert agreement.buffers.worst.endswith(("running_mean", "running_var"))
        assert agreement.counters_equal


@pytest.mark.parametrize(("name", "optimizer", "B"), [("resnet18", "adamw", 2), ("mlp", "sgd", 3)])
def test_vmap_strategy_trains_the_same_models(name: str, optimizer: str, B: int) -> None:
    agreement = compare_training(
        SMALL[name], B, optimizer, steps=3, batch=4, dtype=torch.float64, strategy="vmap"
    )
    assert agreement.failures() == []


@pytest.mark.parametrize("name", ["transformer", "mlp"])
def test_fused_training_matches_in_float32(name: str) -> None:
    agreement = compare_training(
        SMALL[name], 2, "sgd", steps=3, batch=4, dtype=torch.float32, float64_reference=True
    )
    assert agreement.failures() == []
    # float32's own error (separate training against float64) is measured and of the same small order
    own = agreement.reference_parameters
    assert own is not None and 0 < own.max_rel < TOLERANCES[torch.float32].parameters
    assert agreement.row()["separate_vs_float64_param_max_rel"] == own.max_rel


def test_a_wrong_learning_rate_is_caught() -> None:
    """One model trained at another's learning rate is far outside the tolerances."""
    models = models_of("mlp", 2)
    inputs, targets = stacked_batch("mlp", 2)
    array = FusedArray(models)
    optimizer = fused_optimizer(array, "adamw", [1e-3, 1e-3], weight_decay=0.0)
    fused_loss(array(inputs), targets).sum().backward()
    optimizer.step()
    separate = copy.deepcopy(models[1])
    reference = torch.optim.AdamW(separate.parameters(), lr=1.5e-3, weight_decay=0.0)
    nn.functional.cross_entropy(separate(inputs[1]), targets[1]).backward()
    reference.step()
    wrong = difference("weight", array.unfuse()[1][0].weight, separate[0].weight)
    assert wrong.max_rel > 1000 * TOLERANCES[torch.float32].parameters
