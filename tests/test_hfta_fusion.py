"""The HFTA fusion library on the CPU: B fused models train exactly as B models trained separately with
torch.optim (parameters, losses, batch-norm buffers), for ResNet-18, the transformer and the MLP, SGD
with momentum and AdamW, several B including 1, per-model learning rates and weight decays that
differ; fusion really batches (no vmap fallback loop); AMP's casts hold in the fused forward and a
GradScaler drives the fused optimizer; unfuse() round-trips; bad arguments get clear errors.

Agreement is checked in float64, where rounding cannot hide an error, with the tolerances of
gpurepro.hfta.agreement (its docstring says what they are and why), and in float32 where float32
agreement is expected (SGD on the transformer and the MLP)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

from gpurepro.hfta import (
    WORKLOAD_NAMES,
    FusedArray,
    FusionError,
    fused_loss,
    fused_optimizer,
    workload,
)
from gpurepro.hfta.agreement import TOLERANCES, compare_training, difference
from gpurepro.hfta.merged import why_not_merged

# small sizes keep the suite quick: 16x16 images, 16 tokens from a 1000-word vocabulary
SMALL = {
    "resnet18": workload("resnet18", image_size=16, num_classes=10),
    "transformer": workload("transformer", seq_len=16, vocab_size=1000),
    "mlp": workload("mlp"),
}
# every workload with both optimizers and with B = 1 and B > 1; the MLP, cheap, in every combination
CASES = [
    ("resnet18", "sgd", 1),
    ("resnet18", "adamw", 2),
    ("transformer", "sgd", 3),
    ("transformer", "adamw", 1),
    *[("mlp", optimizer, B) for optimizer in ("sgd", "adamw") for B in (1, 4)],
]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """These ops are small: threads gain nothing, and on a busy machine OpenMP threads that spin
    waiting for each other made this file five times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def models_of(name: str, B: int, seed: int = 0) -> list[nn.Module]:
    torch.manual_seed(seed)
    return [SMALL[name].make_model() for _ in range(B)]


def stacked_batch(name: str, B: int, batch: int = 4, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    pairs = [SMALL[name].make_batch(batch, generator) for _ in range(B)]
    return torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])


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


def test_strategy_is_merged_where_the_architecture_allows() -> None:
    assert FusedArray(models_of("resnet18", 2)).strategy == "merged"
    assert FusedArray(models_of("mlp", 1)).strategy == "merged"
    transformer = FusedArray(models_of("transformer", 2))
    assert transformer.strategy == "vmap" and "strategy=vmap" in repr(transformer)
    assert FusedArray(models_of("resnet18", 2), strategy="vmap").strategy == "vmap"
    with pytest.raises(
        FusionError, match=r"cannot run merged: the model \(EncoderClassifier\) has no merged form"
    ):
        FusedArray(models_of("transformer", 2), strategy="merged")
    with pytest.raises(FusionError, match="strategy must be one of auto, merged, vmap; got 'fast'"):
        FusedArray(models_of("mlp", 2), strategy="fast")
    # layers of a listed kind whose settings would mix the models
    reflect = [nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect")) for _ in range(2)]
    assert (
        why_not_merged(reflect[0])
        == "module '0' (Conv2d) has padding_mode='reflect' (only 'zeros' runs merged)"
    )
    assert FusedArray(reflect).strategy == "vmap"
    assert "momentum=None" in why_not_merged(nn.Sequential(nn.BatchNorm1d(4, momentum=None)))
    assert "flattening" in why_not_merged(nn.Sequential(nn.Flatten(0)))


def test_channels_last_layout_trains_the_same_models() -> None:
    """channels_last=True stores each model's conv weights channels-last and images as [N, H, W, B, C],
    so vmap's merged grouped convolution works on channels-last views; training is unchanged."""
    for strategy in ("merged", "vmap"):
        agreement = compare_training(
            SMALL["resnet18"], 3, "sgd", steps=3, batch=4, dtype=torch.float64, channels_last=True,
            strategy=strategy,
        )  # fmt: skip
        assert agreement.failures() == []
    array = FusedArray(models_of("resnet18", 2), channels_last=True)
    weight = array.stacked.conv1.weight
    assert weight[0].is_contiguous(memory_format=torch.channels_last)
    merged = weight.flatten(0, 1)  # what the grouped convolution gets: a view, channels-last
    assert merged.data_ptr() == weight.data_ptr() and merged.is_contiguous(memory_format=torch.channels_last)
    inputs, targets = stacked_batch("resnet18", 2)
    arranged = array.arrange(inputs)
    assert torch.equal(arranged, inputs) and arranged.permute(1, 3, 4, 0, 2).is_contiguous()
    assert array.arrange(arranged) is arranged  # arranged once, not at every step
    fused_loss(array(inputs), targets).sum().backward()
    assert weight.grad is not None and weight.grad.stride() == weight.stride()
    assert "channels_last=True" in repr(array)


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


@pytest.mark.parametrize(
    ("name", "channels_last"), [(name, False) for name in WORKLOAD_NAMES] + [("resnet18", True)]
)
def test_fusion_batches_without_vmap_fallback(name: str, channels_last: bool) -> None:
    """Every op of the fused forward and backward has a batching rule: vmap never loops over models
    (it warns 'There is a performance drop' when it does), in training and in evaluation."""
    array = FusedArray(models_of(name, 2), channels_last=channels_last, strategy="vmap")
    inputs, targets = stacked_batch(name, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fused_loss(array(inputs), targets).sum().backward()
        with torch.no_grad():
            array.eval()(inputs)
    assert [str(w.message) for w in caught if "performance drop" in str(w.message)] == []


@pytest.mark.parametrize("name", WORKLOAD_NAMES)
def test_autocast_casts_as_for_one_model(name: str) -> None:
    """Under torch.autocast every module of the fused forward returns the dtype it returns for one model
    (vmap's batching rules would leave convolutions and biased linears in fp32), the logits agree with
    each model's own autocast forward, and a GradScaler drives the fused optimizer."""
    models = models_of(name, 2)
    inputs, targets = stacked_batch(name, 2)
    array = FusedArray(copy.deepcopy(models))

    def output_dtypes(module: nn.Module, run) -> dict[str, torch.dtype]:
        seen: dict[str, torch.dtype] = {}

        def record(name: str):
            def hook(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> None:
                seen.setdefault(name, output.dtype)

            return hook

        hooks = [m.register_forward_hook(record(n)) for n, m in module.named_modules()]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            result = run()
        for hook in hooks:
            hook.remove()
        return seen, result

    single, single_logits = output_dtypes(models[0], lambda: models[0](inputs[0]))
    fused, fused_logits = output_dtypes(array.stacked, lambda: array(inputs))
    assert fused == single
    assert torch.bfloat16 in single.values()
    # bf16 keeps 8 bits of mantissa: the orders of summation differ, so agreement is to about 1e-2
    torch.testing.assert_close(fused_logits[0].float(), single_logits.float(), rtol=0.05, atol=0.05)

    scaler = torch.amp.GradScaler("cpu")
    optimizer = fused_optimizer(array, "sgd", [0.1, 0.05])
    before = [p.detach().clone() for p in array.parameters()]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        losses = fused_loss(array(inputs), targets)
    assert losses.dtype == torch.float32 and losses.shape == (2,)
    scaler.scale(losses.sum()).backward()
    scaler.step(optimizer)
    scaler.update()
    changed = [not torch.equal(b, p) for b, p in zip(before, array.parameters(), strict=True)]
    assert all(torch.isfinite(p).all() for p in array.parameters()) and sum(changed) > len(changed) // 2


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


def test_unfuse_round_trips() -> None:
    models = models_of("resnet18", 3)
    inputs, _ = stacked_batch("resnet18", 3)
    array = FusedArray(models)
    assert array.B == 3 and "B=3" in repr(array)
    unfused = array.unfuse()
    for model, copy_ in zip(models, unfused, strict=True):
        assert type(copy_) is type(model) and copy_.training
        state, original = copy_.state_dict(), model.state_dict()
        assert state.keys() == original.keys()
        assert all(torch.equal(state[k], original[k]) for k in state)
    # independent copies: training the array changes neither the originals nor the unfused models
    fused_loss(array(inputs), torch.zeros(3, 4, dtype=torch.long)).sum().backward()
    fused_optimizer(array, "sgd", 0.1).step()
    assert torch.equal(unfused[0].conv1.weight, models[0].conv1.weight)
    assert not torch.equal(array.unfuse()[0].conv1.weight, models[0].conv1.weight)
    # the trained array's models, unfused, compute what the array computes (batch norm in eval mode
    # uses each model's own running statistics) and fuse back to the same array
    array.eval()
    trained = array.unfuse()
    assert not any(m.training for m in trained[0].modules())
    with torch.no_grad():
        fused_out = array(inputs)
        for b, model in enumerate(trained):
            torch.testing.assert_close(fused_out[b], model(inputs[b]), rtol=1e-5, atol=1e-5)
    again, state = FusedArray(trained).state_dict(), array.state_dict()
    assert again.keys() == state.keys() and all(torch.equal(again[k], state[k]) for k in state)


def test_per_model_batch_norm_statistics_and_dropout_masks() -> None:
    """Each model's batch-norm statistics come from its own batch only; dropout masks differ by model."""
    models = models_of("resnet18", 2)
    inputs, targets = stacked_batch("resnet18", 2)
    inputs[1] = inputs[1] * 3 + 1  # model 1's batch has other statistics
    array = FusedArray(models)
    array(inputs)
    for b, model in enumerate(models):
        model(inputs[b])
        torch.testing.assert_close(array.stacked.bn1.running_mean[b], model.bn1.running_mean)
        torch.testing.assert_close(array.stacked.bn1.running_var[b], model.bn1.running_var)
    assert array.stacked.bn1.num_batches_tracked.tolist() == [1, 1]

    with_dropout = [nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)) for _ in range(2)]
    with_dropout[1].load_state_dict(with_dropout[0].state_dict())
    out = FusedArray(with_dropout)(torch.ones(2, 4, 8))
    assert not torch.equal(out[0] == 0, out[1] == 0)


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


def test_workload_specs() -> None:
    resnet, transformer, mlp = (workload(name) for name in WORKLOAD_NAMES)
    assert (resnet.sample_shape, resnet.input_dtype, resnet.num_classes) == ((3, 64, 64), torch.float32, 200)
    assert (transformer.sample_shape, transformer.input_dtype, transformer.num_classes) == (
        (128,),
        torch.int64,
        2,
    )
    assert transformer.vocab_size == 30522
    assert (mlp.sample_shape, mlp.num_classes) == ((784,), 10)
    # torchvision's ResNet-18 with a 200-class head: 11,689,512 parameters less 800 x (512 + 1)
    assert sum(p.numel() for p in resnet.make_model().parameters()) == 11_689_512 - 800 * 513
    for spec in (resnet, transformer, mlp):
        x, y = spec.make_batch(3, torch.Generator().manual_seed(5))
        again, _ = spec.make_batch(3, torch.Generator().manual_seed(5))
        assert x.shape == (3, *spec.sample_shape) and x.dtype == spec.input_dtype and torch.equal(x, again)
        assert y.dtype == torch.int64 and y.shape == (3,) and y.min() >= 0 and y.max() < spec.num_classes
    tokens, _ = transformer.make_batch(64, torch.Generator().manual_seed(0))
    assert tokens.min() >= 0 and tokens.max() < 30522
    assert workload("resnet18", num_classes=7).make_model().fc.out_features == 7


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown workload 'vgg'.*resnet18, transformer, mlp"):
        workload("vgg")
    with pytest.raises(FusionError, match="seq_len must be a positive integer, got 0"):
        workload("transformer", seq_len=0)
    resnets = [workload("resnet18", num_classes=c, image_size=16).make_model() for c in (10, 10, 20)]
    with pytest.raises(ValueError, match=r"model 2's 'fc.bias' is \(20,\) float32.*model 0's is \(10,\)"):
        FusedArray(resnets)
    with pytest.raises(FusionError, match="model 1 is a Sequential, model 0 a ResNet"):
        FusedArray([resnets[0], SMALL["mlp"].make_model()])
    differs = [nn.BatchNorm1d(4), nn.BatchNorm1d(4, momentum=0.5)]
    with pytest.raises(FusionError, match="model 1 has .*momentum=0.5"):
        FusedArray(differs)
    with pytest.raises(FusionError, match="empty"):
        FusedArray([])
    array = FusedArray(models_of("mlp", 3))
    with pytest.raises(ValueError, match="lr has 2 values for 3 models"):
        fused_optimizer(array, "sgd", [0.1, 0.2])
    with pytest.raises(FusionError, match="weight_decay must be finite and >= 0, got -1.0"):
        fused_optimizer(array, "adamw", 0.1, weight_decay=[0.0, -1.0, 0.0])
    with pytest.raises(FusionError, match="unknown optimizer 'lamb'; known: sgd, adamw"):
        fused_optimizer(array, "lamb", 0.1)
    with pytest.raises(FusionError, match=r"takes input \[B=3, N, ...\], got \(2, 4, 784\)"):
        array(torch.zeros(2, 4, 784))
    with pytest.raises(FusionError, match=r"logits \[B, N, C\] and targets \[B, N\]"):
        fused_loss(torch.zeros(3, 4, 10), torch.zeros(3, 5, dtype=torch.long))
