"""The merged convolution's matmul form and the fused SGD kernel, on the CPU: the matmul form computes
the grouped convolution (values and gradients, float64 gradcheck) for the shapes ResNets use and
others; a fused array whose convolutions all run as matmuls trains the same models as separate
training; the form's choice and its errors; FusedSGD follows torch.optim.SGD with momentum, dampening,
Nesterov and weight decay, with all models sharing their hyperparameters (one kernel call on the
stacked tensors) and with models that do not (calls on their slices)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gpurepro.hfta import FusedArray, FusedSGD, FusionError, workload
from gpurepro.hfta.agreement import compare_training
from gpurepro.hfta.ops.conv_forms import ConvForms, conv2d_as_matmul

B = 3
# (in channels, out channels, kernel, stride, padding, map size) per model: ResNet's stem, 3x3 and
# strided 3x3, strided 1x1 shortcut, a 1x1 that is a view, a 2x2 map, and a non-square one
SHAPES = [
    (3, 4, 7, 2, 3, (11, 11)),
    (4, 5, 3, 1, 1, (5, 5)),
    (4, 5, 3, 2, 1, (5, 5)),
    (4, 5, 1, 2, 0, (4, 4)),
    (4, 5, 1, 1, 0, (3, 3)),
    (5, 4, 3, 1, 1, (2, 2)),
    (2, 3, (3, 1), (1, 2), (1, 0), (4, 5)),
]


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_form_computes_the_grouped_convolution(shape: tuple, channels_last: bool) -> None:
    in_c, out_c, k, stride, padding, size = shape
    k = (k, k) if isinstance(k, int) else k
    layout = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(2, B * in_c, *size, dtype=torch.float64).contiguous(memory_format=layout)
    weight = torch.randn(B * out_c, in_c, *k, dtype=torch.float64).contiguous(memory_format=layout)
    bias = torch.randn(B * out_c, dtype=torch.float64)
    for with_bias in (False, True):
        b = bias if with_bias else None
        torch.testing.assert_close(
            conv2d_as_matmul(x, weight, b, B, stride, padding), F.conv2d(x, weight, b, stride, padding, 1, B)
        )
    inputs = (x.requires_grad_(), weight.requires_grad_(), bias.requires_grad_())
    assert torch.autograd.gradcheck(lambda x, w, b: conv2d_as_matmul(x, w, b, B, stride, padding), inputs)


def test_matmul_form_without_input_gradient() -> None:
    """The stem's input needs no gradient: only the weight's is computed, and it is right."""
    x = torch.randn(2, B * 3, 9, 9, dtype=torch.float64).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(B * 4, 3, 7, 7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w: conv2d_as_matmul(x, w, None, B, 2, 3), (weight,))
    out = conv2d_as_matmul(x, weight, None, B, 2, 3)
    assert out.is_contiguous(memory_format=torch.channels_last)  # the array's layout, kept


@pytest.mark.parametrize("channels_last", [True, False])
def test_matmul_convolutions_train_the_same_models(channels_last: bool) -> None:
    spec = workload("resnet18", image_size=16, num_classes=10)
    agreement = compare_training(
        spec, 2, "sgd", steps=2, batch=4, dtype=torch.float64, channels_last=channels_last, conv_form="matmul"
    )
    assert agreement.failures() == []


def test_conv_form_choice_and_errors() -> None:
    spec = workload("resnet18", image_size=16, num_classes=10)
    models = [spec.make_model() for _ in range(2)]
    array = FusedArray(models, conv_form="auto")
    array(torch.randn(2, 3, 3, 16, 16))
    assert array.conv_forms.chosen == {}  # on the CPU, auto is cuDNN-free: the grouped convolution
    with pytest.raises(
        FusionError, match="conv_form must be one of auto, grouped, matmul, triton; got 'im2col'"
    ):
        FusedArray(models, conv_form="im2col")
    transformer = workload("transformer", seq_len=8, vocab_size=100)
    with pytest.raises(FusionError, match="conv_form='matmul' applies to the merged strategy"):
        FusedArray([transformer.make_model() for _ in range(2)], conv_form="matmul")
    # a dilated or grouped convolution has no matmul form: it stays a grouped convolution
    forms = ConvForms("matmul")
    x, weight = torch.randn(1, 2 * 4, 6, 6), torch.randn(2 * 4, 2, 3, 3)
    expected = F.conv2d(x, weight, None, 1, 2, 2, 2 * 2)
    torch.testing.assert_close(forms.conv2d(F.conv2d, 2, x, weight, None, 1, 2, 2, 2), expected)


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
