"""Which form a fused 2-D convolution runs in (hfta/ops/conv_forms/choice.py): on the CPU "auto" is the
grouped convolution, a forced form applies only where it computes the convolution, bad choices are
named; on a GPU in cuDNN's benchmark mode (skipped without one) "auto" times the forms once per shape
and keeps the fastest."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gpurepro.hfta import FusedArray, FusionError, workload
from gpurepro.hfta.ops.conv_forms import ConvForms

from ..conftest import needs_gpu


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


@pytest.mark.gpu
@needs_gpu
def test_auto_conv_form_times_both_forms_in_cudnn_benchmark_mode() -> None:
    """With cuDNN's benchmark mode on, each convolution shape is timed in the forms that apply once and
    the fastest kept (the stem, on the data, may run in Triton); the array computes what the grouped
    convolutions compute."""
    spec = workload("resnet18", image_size=64, num_classes=10)
    torch.manual_seed(0)
    models = [spec.make_model() for _ in range(4)]
    inputs = torch.randn(4, 8, 3, 64, 64, device="cuda")
    outputs = {}
    benchmark = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        for form in ("auto", "grouped"):
            array = FusedArray(models, channels_last=True, conv_form=form).cuda()
            with torch.autocast("cuda", dtype=torch.float16):
                outputs[form] = array(array.arrange(inputs)).float()
            outputs[form].sum().backward()
            if form == "auto":
                chosen = dict(array.conv_forms.chosen)
                with torch.autocast("cuda", dtype=torch.float16):
                    array(array.arrange(inputs))  # the second forward times nothing more
                assert array.conv_forms.chosen == chosen
    finally:
        torch.backends.cudnn.benchmark = benchmark
    # one entry per distinct convolution shape of ResNet-18 (stem, 3x3 and strided 3x3 per stage, shortcuts)
    assert len(chosen) >= 11 and set(chosen.values()) <= {"grouped", "matmul", "triton"}
    torch.testing.assert_close(outputs["auto"], outputs["grouped"], atol=2e-2, rtol=2e-2)
