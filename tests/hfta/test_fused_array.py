"""FusedArray on the CPU: it runs merged where the architecture allows, vmap elsewhere; the channels-last
layout trains the same models; under vmap every op batches (no fallback loop); AMP's casts hold in the
fused forward; unfuse() round-trips; each model keeps its own batch-norm statistics and dropout masks; a
merged array is an ordinary module of fused ops, with no torch function mode on its forward, that
torch.compile traces whole (no graph break) and trains as the eager one does; a fused training step
dispatches as many ops at any B, about as many computing ops as one model's step (the host's cost does
not grow with B); bad arguments get clear errors."""

from __future__ import annotations

import copy
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
from torch import nn
from torch.overrides import _get_current_function_mode_stack
from torch.utils._python_dispatch import TorchDispatchMode

from gpurepro.hfta import WORKLOAD_NAMES, FusedArray, FusionError, fused_loss, fused_optimizer, workload
from gpurepro.hfta.agreement import compare_training
from gpurepro.hfta.merged import why_not_merged
from gpurepro.hfta.ops import FusedBatchNorm, FusedConv, FusedLinear

from .small import SMALL, models_of, stacked_batch


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


@contextmanager
def onednn_off() -> Iterator[None]:
    """torch's CPU convolutions without oneDNN. torch 2.14's oneDNN bf16 weight gradient of a 3x3
    stride-2 convolution on a 1x1 input (SMALL's layer4.0.conv1, on a CPU with AVX512-BF16) leaves the
    eight taps that see only padding unwritten: they hold whatever the reused memory held, often huge
    or inf, so whether GradScaler skipped the step depended on the tests that ran before. torch's own
    kernels write them (zeros)."""
    enabled = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = enabled


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
    with onednn_off():
        scaler.scale(losses.sum()).backward()
    scale = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == scale, "GradScaler found an inf or NaN gradient and skipped the step"
    changed = [not torch.equal(b, p) for b, p in zip(before, array.parameters(), strict=True)]
    assert all(torch.isfinite(p).all() for p in array.parameters()) and sum(changed) > len(changed) // 2


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


@pytest.mark.parametrize("name", ["resnet18", "mlp"])
def test_a_merged_array_is_an_ordinary_module_of_fused_layers(name: str) -> None:
    array = FusedArray(models_of(name, 2))
    kinds = {type(m) for m in array.stacked.modules()}
    assert FusedLinear in kinds and not kinds & {nn.Linear, nn.Conv2d, nn.BatchNorm2d}
    assert (FusedConv in kinds and FusedBatchNorm in kinds) == (name == "resnet18")
    modes: list[int] = []
    hook = array.stacked.register_forward_hook(
        lambda *_: modes.append(len(_get_current_function_mode_stack()))
    )
    array(stacked_batch(name, 2, batch=2)[0])
    hook.remove()
    assert modes == [0]  # no torch function mode on the forward
    assert array.model_major == (name == "mlp")


@pytest.mark.parametrize(("name", "channels_last"), [("resnet18", False), ("resnet18", True), ("mlp", False)])
def test_torch_compile_traces_the_fused_array_whole(name: str, channels_last: bool) -> None:
    array = FusedArray(models_of(name, 2), channels_last=channels_last).double()
    inputs, targets = stacked_batch(name, 2, batch=2)
    inputs = inputs.double()
    explained = torch._dynamo.explain(array)(inputs)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    # compiled (fullgraph: a graph break is an error) and trained: the same losses and gradients as eager
    eager = copy.deepcopy(array)
    compiled = torch.compile(array, backend="aot_eager", fullgraph=True)
    for module in (compiled, eager):
        fused_loss(module(inputs), targets).sum().backward()
    for (name_, mine), theirs in zip(array.named_parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(mine.grad, theirs.grad, msg=name_)


class _Ops(TorchDispatchMode):
    """Counts the aten ops dispatched (each a kernel launch on a GPU, unless it only makes a view)."""

    VIEWS = ("view", "_unsafe_view", "transpose", "t", "expand", "squeeze", "unsqueeze", "detach")

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))

    def computing(self) -> int:
        return sum(n for op, n in self.ops.items() if op not in self.VIEWS)


def _step_ops(name: str, count: int | None) -> _Ops:
    """The ops of one training step (after a first one): of one model alone if count is None, else of
    `count` models fused."""
    inputs, targets = stacked_batch(name, count or 1, batch=2)
    if count is None:
        model = models_of(name, 1)[0]
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
        loss = lambda: nn.functional.cross_entropy(model(inputs[0]), targets[0])  # noqa: E731
    else:
        array = FusedArray(models_of(name, count))
        optimizer = fused_optimizer(array, "sgd", 0.1)
        loss = lambda: fused_loss(array(inputs), targets).sum()  # noqa: E731
    optimizer.zero_grad()
    loss().backward()  # the first step makes the momentum buffers
    optimizer.step()
    counter = _Ops()
    optimizer.zero_grad()
    with counter:
        loss().backward()
        optimizer.step()
    return counter


@pytest.mark.parametrize("name", ["resnet18", "mlp"])
def test_the_host_cost_of_a_fused_step_does_not_grow_with_b(name: str) -> None:
    """Every op of a fused step is one op for all B models: as many at B=2 as at B=5, and, of those that
    compute (launch a kernel on a GPU), at most a tenth and a handful more than one model's step has
    (the fused loss's per-model means, batched matmuls' bias gradients); the rest are views of the
    stacked parameters."""
    one, two, five = _step_ops(name, None), _step_ops(name, 2), _step_ops(name, 5)
    assert two.ops == five.ops
    assert two.computing() <= 1.1 * one.computing() + 8


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
