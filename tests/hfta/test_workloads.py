"""The fusion study's workloads: their models' sizes and inputs, and seeded batches that repeat."""

from __future__ import annotations

import torch

from gpurepro.hfta import WORKLOAD_NAMES, workload


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
