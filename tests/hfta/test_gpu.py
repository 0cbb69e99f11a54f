"""The HFTA fusion library on a CUDA GPU (skipped without one): the paths that only CUDA takes (the
choice of convolution form on a GPU: test_conv_choice.py; the Triton kernels compiled: test_conv_triton.py).

On a GPU the study fuses ResNet-18 channels-last, batch norm runs CUDA's kernels under vmap, and fused
attention must use a backend whose backward works on vmap's batched layout. Each of these once failed
only on a GPU (an NYI is_contiguous query, an attention backward "LSE is not correctly aligned")."""

from __future__ import annotations

import pytest
import torch

from gpurepro.hfta import FusedArray, fused_loss, fused_optimizer, workload
from gpurepro.hfta.agreement import compare_training

from ..conftest import needs_gpu

pytestmark = [pytest.mark.gpu, needs_gpu]

SMALL = {
    "resnet18": workload("resnet18", image_size=32, num_classes=10),
    "transformer": workload("transformer", seq_len=32, vocab_size=1000),
}


@pytest.mark.parametrize(
    ("name", "strategy", "conv_form"),
    [
        ("resnet18", "merged", "grouped"),
        ("resnet18", "merged", "matmul"),
        ("resnet18", "vmap", "auto"),
        ("transformer", "vmap", "auto"),
    ],
)
def test_fused_training_matches_separate_training_on_the_gpu(
    name: str, strategy: str, conv_form: str
) -> None:
    """float64 on CUDA, channels-last for the images: fused and separate training agree to rounding."""
    agreement = compare_training(
        SMALL[name], 3, "adamw", steps=2, batch=4, device="cuda", dtype=torch.float64,
        channels_last=name == "resnet18", strategy=strategy, conv_form=conv_form,
    )  # fmt: skip
    assert agreement.failures() == []
    assert agreement.counters_equal


@pytest.mark.parametrize(
    ("name", "strategy"), [("resnet18", "merged"), ("resnet18", "vmap"), ("transformer", "vmap")]
)
def test_amp_training_steps_on_the_gpu(name: str, strategy: str) -> None:
    """fp16 autocast with a GradScaler, as the study trains: steps run, losses stay finite and fall on
    a repeated batch, and channels-last weights keep their layout through the optimizer."""
    spec = SMALL[name]
    torch.manual_seed(0)
    models = [spec.make_model() for _ in range(4)]
    array = FusedArray(models, channels_last=name == "resnet18", strategy=strategy).cuda()
    generator = torch.Generator().manual_seed(1)
    pairs = [spec.make_batch(8, generator, "cuda") for _ in range(4)]
    inputs = array.arrange(torch.stack([x for x, _ in pairs]))
    targets = torch.stack([y for _, y in pairs])
    optimizer = fused_optimizer(array, "sgd", 0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    strides = {n: p.stride() for n, p in array.named_parameters()}
    losses = []
    for _ in range(5):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = fused_loss(array(inputs), targets)
        scaler.scale(loss.sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.detach().float().cpu())
    assert all(torch.isfinite(step).all() for step in losses)
    assert (losses[-1] < losses[0]).all()
    assert {n: p.stride() for n, p in array.named_parameters()} == strides


@pytest.mark.parametrize("fused", [False, True], ids=["one-model", "fused-array"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_a_graphed_step_trains_like_the_eager_step(fused: bool, precision: str) -> None:
    """The whole step replayed as a CUDA graph (gradient scaler included) reaches the loss the eager
    step reaches from the same seed, batches and number of steps (warm-up 5: 3 eager, 2 replayed).

    cuDNN runs deterministic algorithms here: with its benchmark mode two eager runs differ by rounding,
    which a few SGD steps amplify past any useful tolerance (on an H100, two eager fp32 runs ended 20%
    apart after 11 steps at lr 0.05). So deterministic, the fused array's graphed losses equal its eager
    ones to the last digit (H100, fp32 and fp16). A single model's graphed step uses torch's fused SGD
    instead of its default one, which rounds differently under the fp16 scaler (1e-4 after 3 steps): a
    smaller learning rate and tolerance keep that apart from a step that trains wrongly."""
    from gpurepro.hfta_study import training

    def final_loss(graphs: bool) -> float:
        settings = training.TrainSettings(
            "resnet18", 16, precision, steps=2, warmup=5, optimizer="sgd", lr=0.01, seed=1,
            device="cuda:0", image_size=32, graphs=graphs,
        )  # fmt: skip
        training.prepare_process(settings)
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = False, True
        try:
            unit = training.train_fused(settings, 3) if fused else training.train_single(settings, 0)
        finally:
            torch.backends.cudnn.deterministic = False
        return unit.final_loss

    eager, graphed = final_loss(False), final_loss(True)
    exact = fused or precision == "fp32"
    assert graphed == pytest.approx(eager, rel=1e-5 if exact else 1e-2), (eager, graphed)
