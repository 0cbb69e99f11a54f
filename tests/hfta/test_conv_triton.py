"""The fused convolution's Triton forms (hfta/ops/conv_forms/triton/): the stem's (no input gradient) and
the layers' (channels in multiples of 16, input gradient too): output, input, weight and bias gradients
against F.conv2d in float64, in Triton's interpreter on the CPU (tests/conftest.py turns it on where no
GPU is) or compiled on a
GPU; the weight gradient's sum over several pixel splits; a fused CNN runs its convolutions in Triton
where they apply and computes what the grouped form does; and the form's errors."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gpurepro.hfta import FusedArray, FusionError
from gpurepro.hfta.ops.conv_forms import choice
from gpurepro.hfta.ops.conv_forms.sizes import as_pair
from gpurepro.hfta.ops.conv_forms.triton import conv2d_implicit_gemm, layers, stem, triton_problem
from gpurepro.hfta.ops.conv_forms.triton.launch import launch_hooks_set

from ..conftest import missing_installable, needs_gpu

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
DTYPES = [torch.float16] + ([torch.float32] if DEVICE.type == "cpu" else [])  # a GPU computes fp16/bf16
REASON = triton_problem(DEVICE, torch.float16)
# Triton comes with torch's Linux wheels: there a missing Triton is a broken install, which fails under CI
# (_triton_installed); any other reason (a device Triton cannot run on) is this machine's, and skips.
TRITON_INSTALLABLE = sys.platform == "linux"
TRITON_MISSING = REASON is not None and REASON.startswith("Triton is not importable")
pytestmark = pytest.mark.skipif(
    REASON is not None and not (TRITON_MISSING and TRITON_INSTALLABLE),
    reason=f"the Triton form cannot run: {REASON}",
)


@pytest.fixture(autouse=True)
def _triton_installed() -> None:
    if TRITON_MISSING:
        missing_installable(str(REASON), "pip install -e '.[test]' (torch's Linux wheels bring Triton)")


# (B, in channels, out channels, kernel, stride, padding, image size): ResNet's stem; a 3x3; a strided
# 1x1; more output channels than one block holds (70: two blocks of 64, the second part-filled); a
# non-square kernel, stride and padding on a non-square image
SHAPES = [
    (2, 3, 8, 7, 2, 3, (13, 13)),
    (3, 4, 20, 3, 1, 1, (7, 7)),
    (1, 3, 70, 1, 2, 0, (6, 6)),
    (2, 3, 5, (2, 3), (1, 2), (1, 0), (5, 7)),
]


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b).abs().max() / b.abs().max()).item()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("B", "in_c", "out_c", "k", "stride", "padding", "size"), SHAPES)
def test_triton_convolution_matches_conv2d(
    B: int, in_c: int, out_c: int, k, stride, padding, size, bias: bool, dtype: torch.dtype
) -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, B * in_c, *size, generator=generator).to(DEVICE, dtype)
    weight = torch.randn(B * out_c, in_c, *as_pair(k), generator=generator, dtype=torch.float64)
    b = torch.randn(B * out_c, generator=generator, dtype=torch.float64) if bias else None
    mine = [t.to(DEVICE, copy=True).requires_grad_() if t is not None else None for t in (weight, b)]
    out = conv2d_implicit_gemm(x, mine[0], mine[1], B, as_pair(stride), as_pair(padding))
    grad = torch.randn(out.shape, generator=generator, dtype=torch.float64)
    out.backward(grad.to(DEVICE, dtype))

    exact = [t.clone().requires_grad_() if t is not None else None for t in (weight, b)]
    reference = F.conv2d(x.cpu().double(), exact[0], exact[1], stride, padding, groups=B)
    reference.backward(grad)
    limit = 1e-5 if dtype == torch.float32 else 3e-3  # fp32 accumulation of fp16 products
    assert out.dtype == dtype and out.is_contiguous(memory_format=torch.channels_last)
    assert _relative(out.cpu(), reference) < limit
    assert _relative(mine[0].grad.cpu(), exact[0].grad) < limit
    if bias:
        assert _relative(mine[1].grad.cpu(), exact[1].grad) < limit


def test_weight_gradient_sums_several_pixel_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    """With splits of 128 pixels, 2 images of 13x13 (338 pixels) make three splits, the last part-filled."""
    monkeypatch.setattr(stem, "_WGRAD_ROWS_PER_SPLIT", 128)
    x = torch.randn(2, 6, 26, 26, dtype=torch.float16).to(DEVICE)
    weight = torch.randn(16, 3, 7, 7, dtype=torch.float64)
    mine = weight.to(DEVICE, copy=True).requires_grad_()
    conv2d_implicit_gemm(x, mine, None, 2, (2, 2), (3, 3)).float().square().sum().backward()
    exact = weight.clone().requires_grad_()
    F.conv2d(x.cpu().double(), exact, None, 2, 3, groups=2).square().sum().backward()
    assert _relative(mine.grad.cpu(), exact.grad) < 3e-3


# (B, in channels, out channels, kernel, stride, padding, image size, bias, weights channels-last, dtype)
# for the layers' kernels: a 3x3 (several weight-gradient splits: 2 images of 9x9 are 162 output pixels,
# splits of 64 made below); a strided 3x3 on an odd-sized image (input pixels of phases no tap reaches
# at the border); a strided 1x1 (three of four phases get no gradient); a non-square kernel and stride
LAYER_SHAPES = [
    (2, 16, 32, 3, 1, 1, (9, 9), True, True, torch.float32),
    (3, 32, 16, 3, 2, 1, (7, 6), False, False, torch.float16),
    (2, 16, 16, 1, 2, 0, (6, 6), True, False, torch.float32),
    (1, 16, 32, (2, 3), (2, 1), (1, 0), (5, 7), False, True, torch.float32),
]


@pytest.mark.parametrize(
    ("B", "in_c", "out_c", "k", "stride", "padding", "size", "bias", "last", "dtype"), LAYER_SHAPES
)
def test_layer_convolution_matches_conv2d(
    monkeypatch: pytest.MonkeyPatch, B: int, in_c: int, out_c: int, k, stride, padding, size, bias: bool,
    last: bool, dtype: torch.dtype,
) -> None:  # fmt: skip
    monkeypatch.setattr(layers, "_WGRAD_ROWS_PER_SPLIT", 64)
    dtype = dtype if DEVICE.type == "cpu" else torch.float16
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, B * in_c, *size, generator=generator, dtype=torch.float64)
    weight = torch.randn(B * out_c, in_c, *as_pair(k), generator=generator, dtype=torch.float64)
    b = torch.randn(B * out_c, generator=generator, dtype=torch.float64) if bias else None
    layout = torch.channels_last if last else torch.contiguous_format
    mine_x = x.to(DEVICE, dtype, memory_format=torch.channels_last).requires_grad_()
    mine_w = weight.float().to(DEVICE, memory_format=layout).requires_grad_()  # float32, as under AMP
    mine_b = b.float().to(DEVICE).requires_grad_() if bias else None
    mine = [mine_w, mine_b]
    out = conv2d_implicit_gemm(mine_x, mine[0], mine[1], B, as_pair(stride), as_pair(padding))
    grad = torch.randn(out.shape, generator=generator, dtype=torch.float64)
    out.backward(grad.to(DEVICE, dtype))

    exact = [t.clone().requires_grad_() if t is not None else None for t in (x, weight, b)]
    reference = F.conv2d(exact[0], exact[1], exact[2], stride, padding, groups=B)
    reference.backward(grad)
    limit = 1e-5 if dtype == torch.float32 else 3e-3
    assert out.dtype == dtype and out.is_contiguous(memory_format=torch.channels_last)
    assert _relative(out.cpu(), reference) < limit
    assert _relative(mine_x.grad.cpu(), exact[0].grad) < limit
    assert mine[0].grad.stride() == mine[0].stride()  # the weight gradient in the parameter's layout
    assert _relative(mine[0].grad.cpu(), exact[1].grad) < limit
    if bias:
        assert _relative(mine[1].grad.cpu(), exact[2].grad) < limit


def _small_cnn(width: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 5, stride=2, padding=2), nn.ReLU(),  # a bias not cancelled by a batch norm
        nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10),
    )  # fmt: skip


@pytest.mark.parametrize(("width", "in_triton"), [(8, 1), (16, 2)])
def test_fused_array_runs_its_convolutions_in_triton_where_they_apply(
    monkeypatch: pytest.MonkeyPatch, width: int, in_triton: int
) -> None:
    """The first convolution's input (the data) needs no gradient: it runs in the stem's kernels; the
    second runs in the layers' kernels where its channels are a multiple of 16, else grouped; either
    way the array computes what the all-grouped array does."""
    calls = []
    implicit_gemm = choice.conv2d_implicit_gemm
    monkeypatch.setattr(choice, "conv2d_implicit_gemm", lambda *a: calls.append(a) or implicit_gemm(*a))
    torch.manual_seed(0)
    models = [_small_cnn(width) for _ in range(2)]
    inputs = torch.randn(2, 8, 3, 16, 16, device=DEVICE)
    on_gpu = DEVICE.type == "cuda"  # there under fp16 autocast (the Triton form's dtype), else float32
    results = []
    for form in ("grouped", "triton"):
        array = FusedArray(models, channels_last=True, conv_form=form).to(DEVICE)
        with torch.autocast(DEVICE.type, dtype=torch.float16, enabled=on_gpu):
            out = array(inputs)
        out.float().square().mean().backward()
        results.append((out.float(), {n: p.grad for n, p in array.stacked.named_parameters()}))
    assert len(calls) == in_triton
    (out_grouped, grads_grouped), (out_triton, grads_triton) = results
    # On a GPU both compute in fp16 with float32 sums in different orders: the stem's bias gradient, a
    # sum of small products through both convolutions' backward, differed by 2.2% of its largest entry
    limit = 5e-2 if on_gpu else 1e-5
    assert _relative(out_triton, out_grouped.double()) < limit
    for name, grad in grads_grouped.items():
        assert _relative(grads_triton[name], grad.double()) < limit, name


def test_triton_form_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    weight = torch.randn(8, 3, 3, 3)
    x = torch.randn(1, 6, 5, 5, requires_grad=True)
    with pytest.raises(
        FusionError, match=r"input gradient only for channels in multiples of 16 \(got 3 in, 4 out\)"
    ):
        conv2d_implicit_gemm(x, weight, None, 2, (1, 1), (1, 1))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert triton_problem(torch.device("cpu"), torch.float32) == (
        "on the CPU Triton runs only in its interpreter (TRITON_INTERPRET=1)"
    )
    with pytest.raises(FusionError, match=r"conv_form='triton' cannot run here: on the CPU Triton runs only"):
        conv2d_implicit_gemm(x.detach(), weight, None, 2, (1, 1), (1, 1))
    assert "float16 or bfloat16" in str(triton_problem(torch.device("cuda"), torch.float32))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "float32" in str(triton_problem(torch.device("cpu"), torch.float64))


@pytest.mark.gpu
@needs_gpu
def test_layer_kernels_are_launched_directly_after_their_first_call() -> None:
    """The second call of each kernel calls its compiled binary (launch.CachedLaunch), and computes
    exactly what the first, launched through Triton, did."""
    x = torch.randn(4, 2 * 32, 8, 8, device=DEVICE, dtype=torch.float16).to(memory_format=torch.channels_last)
    weight = torch.randn(2 * 32, 32, 3, 3, device=DEVICE).to(memory_format=torch.channels_last)
    results = []
    for _ in range(2):
        inputs = [t.detach().clone().requires_grad_() for t in (x, weight)]
        out = conv2d_implicit_gemm(inputs[0], inputs[1], None, 2, (1, 1), (1, 1))
        out.float().square().sum().backward()
        results.append([out, inputs[0].grad, inputs[1].grad])
    for first, second in zip(*results, strict=True):
        assert torch.equal(first, second)
    kernels = layers._KERNELS
    assert len(kernels) == 3
    assert all(launch.compiled and None not in launch.compiled.values() for launch in kernels.values())
    assert all(launch.direct_launches >= 1 for launch in kernels.values())  # the second call's


def test_a_triton_launch_hook_is_seen_only_while_one_is_set() -> None:
    """Triton's launch hooks (a HookChain, never None, from Triton 3.5) count as set only while they hold
    a call: with none, kernels are launched directly, else through Triton, which gives hooks metadata."""
    from triton import knobs

    assert not launch_hooks_set()
    hooks = knobs.runtime.launch_exit_hook
    hook = lambda metadata: None  # noqa: E731
    chained = hasattr(hooks, "add")  # else an older Triton's plain attribute
    if chained:
        hooks.add(hook)
    else:
        knobs.runtime.launch_exit_hook = hook
    try:
        assert launch_hooks_set()
    finally:
        if chained:
            hooks.remove(hook)
        else:
            knobs.runtime.launch_exit_hook = hooks
    assert not launch_hooks_set()
