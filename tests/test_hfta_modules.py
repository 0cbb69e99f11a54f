"""HFTA's fused modules on the CPU: each fused module (convolution 1-, 2- and 3-D, batch norm in training
and evaluation, linear in both layouts) computes what B separate modules compute, values and gradients,
in float64; a merged FusedArray is an ordinary module of fused layers, with no torch function mode on
its forward; torch.compile traces the fused ResNet-18 and MLP whole (no graph break) and the compiled
array trains as the eager one does; and a fused training step dispatches as many ops at any B, about as
many computing ops as one model's step (the host's cost does not grow with B)."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable

import pytest
import torch
from torch import Tensor, nn
from torch.overrides import _get_current_function_mode_stack
from torch.utils._python_dispatch import TorchDispatchMode

from gpurepro.hfta import FusedArray, fused_loss, fused_optimizer, workload
from gpurepro.hfta.ops import FusedBatchNorm, FusedConv, FusedLinear, fuse_layers
from gpurepro.hfta.ops.conv_forms import ConvForms

B = 3
SMALL = {
    "resnet18": workload("resnet18", image_size=16, num_classes=10),
    "mlp": workload("mlp"),
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _stacked(layers: list[nn.Module]) -> nn.Module:
    """A copy of layer 0 holding the layers' parameters and buffers stacked [B, ...] (as FusedArray
    builds it), its training mode layer 0's."""
    stacked = copy.deepcopy(layers[0])
    for name, _ in layers[0].named_parameters():
        setattr(stacked, name, nn.Parameter(torch.stack([getattr(m, name).detach() for m in layers])))
    for name, _ in layers[0].named_buffers():
        stacked.register_buffer(name, torch.stack([getattr(m, name) for m in layers]))
    return stacked


def _check(
    layers: list[nn.Module],
    inputs: list[Tensor],
    merge: Callable[[Tensor], Tensor],
    split: Callable[[Tensor], Tensor],
) -> nn.Module:
    """The fused module of `layers` against the layers one by one: outputs, input and parameter
    gradients, and buffers after the forward, in float64."""
    fused = fuse_layers(_stacked(layers), B, ConvForms("grouped"))
    x = torch.stack(inputs).requires_grad_()
    out = split(fused(merge(x)))
    grad = torch.randn_like(out)
    out.backward(grad)
    for b, (layer, one) in enumerate(zip(layers, inputs, strict=True)):
        mine = one.clone().requires_grad_()
        expected = layer(mine)
        expected.backward(grad[b])
        torch.testing.assert_close(out[b], expected)
        torch.testing.assert_close(x.grad[b], mine.grad)
        for name, p in layer.named_parameters():
            torch.testing.assert_close(getattr(fused, name).grad[b], p.grad, msg=name)
        for name, t in layer.named_buffers():
            torch.testing.assert_close(getattr(fused, name)[b], t, msg=name)
    return fused


def _merge(x: Tensor) -> Tensor:
    """[B, N, C, *space] -> [N, B*C, *space]."""
    return x.transpose(0, 1).flatten(1, 2)


def _split(y: Tensor) -> Tensor:
    return y.unflatten(1, (B, -1)).transpose(0, 1)


@pytest.mark.parametrize(
    ("make", "space"),
    [
        (lambda: nn.Conv1d(4, 5, 3, stride=2, padding=1), (9,)),
        (lambda: nn.Conv2d(3, 4, 7, stride=2, padding=3, bias=False), (11, 11)),
        (lambda: nn.Conv2d(4, 6, 3, padding="same", dilation=2, groups=2), (6, 7)),
        (lambda: nn.Conv3d(2, 3, 2, stride=(1, 2, 1)), (4, 5, 3)),
    ],
)
def test_fused_convolution_computes_b_convolutions(make: Callable[[], nn.Module], space: tuple) -> None:
    torch.manual_seed(0)
    layers = [make().double() for _ in range(B)]
    inputs = [torch.randn(2, layers[0].in_channels, *space, dtype=torch.float64) for _ in range(B)]
    fused = _check(layers, inputs, _merge, _split)
    assert isinstance(fused, FusedConv) and fused.weight.shape[0] == B


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize(("make", "space"), [(nn.BatchNorm1d, ()), (nn.BatchNorm2d, (3, 4))])
def test_fused_batch_norm_computes_b_batch_norms(make: type, space: tuple, training: bool) -> None:
    torch.manual_seed(0)
    layers = [make(4, momentum=0.3).double().train(training) for _ in range(B)]
    for b, layer in enumerate(layers):  # statistics and affine parameters that differ by model
        layer.running_mean.uniform_(-1, 1)
        layer.running_var.uniform_(0.5, 2)
        nn.init.uniform_(layer.weight, 0.5, 1.5)
        nn.init.uniform_(layer.bias, -1, 1)
        layer.num_batches_tracked.fill_(b)
    inputs = [torch.randn(5, 4, *space, dtype=torch.float64) * (b + 1) + b for b in range(B)]
    fused = _check(layers, inputs, _merge, _split)
    assert isinstance(fused, FusedBatchNorm)
    assert fused.num_batches_tracked.tolist() == [b + training for b in range(B)]


@pytest.mark.parametrize("bias", [True, False])
def test_fused_linear_computes_b_linear_layers_in_both_layouts(bias: bool) -> None:
    torch.manual_seed(0)
    layers = [nn.Linear(5, 4, bias=bias).double() for _ in range(B)]
    inputs = [torch.randn(6, 5, dtype=torch.float64) for _ in range(B)]
    assert isinstance(_check(layers, inputs, _merge, _split), FusedLinear)  # merged [N, B*in]
    for layer in layers:
        layer.zero_grad()
    _check(layers, inputs, lambda x: x, lambda y: y)  # model-major [B, N, in]


def models_of(name: str, count: int) -> list[nn.Module]:
    torch.manual_seed(0)
    return [SMALL[name].make_model() for _ in range(count)]


def batch_of(name: str, count: int, batch: int = 2) -> tuple[Tensor, Tensor]:
    generator = torch.Generator().manual_seed(1)
    pairs = [SMALL[name].make_batch(batch, generator) for _ in range(count)]
    return torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])


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
    array(batch_of(name, 2)[0])
    hook.remove()
    assert modes == [0]  # no torch function mode on the forward
    assert array.model_major == (name == "mlp")


@pytest.mark.parametrize(("name", "channels_last"), [("resnet18", False), ("resnet18", True), ("mlp", False)])
def test_torch_compile_traces_the_fused_array_whole(name: str, channels_last: bool) -> None:
    array = FusedArray(models_of(name, 2), channels_last=channels_last).double()
    inputs, targets = batch_of(name, 2)
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
    inputs, targets = batch_of(name, count or 1)
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
