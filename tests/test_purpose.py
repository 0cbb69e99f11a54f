"""Processes by purpose: a point a claim reads starts at 3 processes, a point only a figure shows runs 2
(host-paced) or 1 (GPU-bound); which claims read a point is the rounds' own mapping (purpose.py)."""

from __future__ import annotations

from gpurepro import rounds
from gpurepro.more_processes import purpose
from gpurepro.profiles import load_profile


def test_the_full_h100_plan_gives_claim_points_three_processes_and_figure_points_fewer() -> None:
    inference = load_profile("h100")["inference"]
    deit = purpose.counter("deit", inference)
    assert deit({"vit_model": "deit-b", "batch": 1, "precision": "fp16", "mode": "eager"}) == 3
    assert deit({"vit_model": "deit-b", "batch": 1, "precision": "fp32", "mode": "eager"}) == 2
    assert deit({"vit_model": "deit-b", "batch": 32, "precision": "fp16", "mode": "compile"}) == 1
    hfta = load_profile("h100")["hfta"]
    count = purpose.counter("hfta", hfta)
    point = {"net": "resnet18", "step": "stock", "precision": "fp16"}
    assert count({**point, "scheme": "hfta", "b": 32}) == 3  # read at the profile's fused_best_b
    assert count({**point, "scheme": "serial", "b": 1}) == 3
    assert count({**point, "scheme": "hfta", "b": 8}) == 2  # host-paced, a figure only
    assert count({**point, "scheme": "concurrent", "b": 32}) == 1
    mps = {**point, "scheme": "mps", "b": 32}
    assert "hfta-speedup-over-mps" in purpose.claims_reading("hfta", hfta, mps)


def test_the_quick_plan_keeps_three_processes_for_every_point_a_claim_reads() -> None:
    inference = load_profile("h100", quick=True)["inference"]
    deit = purpose.counter("deit", inference)
    assert deit({"vit_model": "deit-t", "batch": 1, "precision": "fp16", "mode": "eager"}) == 3
    assert deit({"vit_model": "deit-b", "batch": 1, "precision": "fp16", "mode": "cudagraph"}) == 1
    assert (
        purpose.counter("hfta", load_profile("h100", quick=True)["hfta"])(
            {"net": "resnet18", "step": "stock", "precision": "fp16", "scheme": "mps", "b": 32}
        )
        == 3
    )
    assert rounds.most_repeats({"repeats": {"claims": 3, "host_paced": 2, "gpu_bound": 1}}) == 3
