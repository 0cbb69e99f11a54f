"""Each measurement counted once: two claims that read one figure of one table (NVIDIA's ResNet-50
images/s on a V100 and on an A100, both the ddp table's 1-GPU AMP point) are one reading in their paper's
headline, and the claim read through the other's figure shows that figure's expectation."""

from __future__ import annotations

import tarfile
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from gpurepro.hardware import load_hardware
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.measurements import counted, counted_once, measurement_key
from gpurepro.verdict.render import markdown
from gpurepro.verdict.summary import paper_verdicts

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "reference-runs" / "h200-quick-2026-11-28.tar.gz"
NVIDIA = "NVIDIA ResNet-50 v1.5 (DeepLearningExamples)"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, dict]:
    """The shipped claims judged on the shipped H200 quick run's tables."""
    folder = tmp_path_factory.mktemp("run")
    with tarfile.open(ARCHIVE) as packed:
        packed.extractall(folder, filter="data")
    tables = {path.stem: pd.read_csv(path) for path in folder.rglob("tables/*.csv")}
    hardware = load_hardware()
    claims = load_claims([ROOT / "config" / "expected"], hardware=hardware)
    return evaluate(claims, tables, hardware), hardware


def test_no_headline_counts_one_measurement_twice(shipped: tuple[list, dict]) -> None:
    outcomes, _ = shipped
    keys = Counter(measurement_key(outcome.claim) for outcome in counted(outcomes))
    assert max(keys.values()) == 1, [key for key, n in keys.items() if n > 1]
    shared = {o.claim.id: o.counted_with.id for o in counted_once(outcomes) if o.counted_with is not None}
    assert shared["nvidia-resnet50-v100-amp-1gpu"] == "nvidia-resnet50-a100-80gb-amp-1gpu"
    (nvidia,) = [p for p in paper_verdicts(outcomes) if p.paper == NVIDIA]
    # 8 claims, 5 figures: one GPU, eight GPUs, the speedup at eight, AMP over TF32, AMP over FP32
    assert (nvidia.total, nvidia.shared) == (5, 3)
    assert "of 5 distinct measurements testable here, of 8 claims" in nvidia.headline


def test_a_claim_read_through_another_shows_that_claims_figure_and_range(shipped: tuple[list, dict]) -> None:
    """On an H200 the V100 figure reads through the A100's: its row expects the A100's scaled figure,
    inside the range it prints, and says where it is counted."""
    outcomes, _ = shipped
    by_id = {o.claim.id: o for o in counted_once(outcomes)}
    v100, a100 = by_id["nvidia-resnet50-v100-amp-1gpu"], by_id["nvidia-resnet50-a100-80gb-amp-1gpu"]
    assert v100.through == a100.claim.id and a100.counted_with is None
    assert v100.describe_expected().startswith(a100.claim.describe_expected(a100.factor))
    assert v100.describe_expected().endswith(a100.describe_expected().split("; ")[-1])
    assert "counted once there" in v100.status and "counted once" not in a100.status


def test_on_the_v100_its_own_figure_counts_and_the_a100s_is_shown_with_it() -> None:
    """A measurement judged exactly on its paper's GPU is the reading that counts."""
    hardware = load_hardware()
    claims = [
        c
        for c in load_claims([ROOT / "config" / "expected" / "resnet50_training.yaml"], hardware=hardware)
        if c.id in ("nvidia-resnet50-a100-80gb-amp-1gpu", "nvidia-resnet50-v100-amp-1gpu")
    ]
    ddp = pd.DataFrame(
        [
            {"gpu_name": "Tesla V100-SXM2-16GB", "model": "resnet50", "gpus": 1, "precision": "fp16",
             "status": "ok", "metric": "throughput", "statistic": "total", "value": 1250.0,
             "unit": "images/s"}
        ]
    )  # fmt: skip
    outcomes = counted_once(evaluate(claims, {"ddp": ddp}, hardware))
    by_id = {o.claim.id: o for o in outcomes}
    assert by_id["nvidia-resnet50-v100-amp-1gpu"].counted_with is None
    assert by_id["nvidia-resnet50-a100-80gb-amp-1gpu"].counted_with.id == "nvidia-resnet50-v100-amp-1gpu"
    (paper,) = paper_verdicts(outcomes)
    assert paper.total == 1 and paper.testable == 1


def test_the_page_says_which_reading_counts(shipped: tuple[list, dict]) -> None:
    from gpurepro.verdict.here import Here

    outcomes, _ = shipped
    page = markdown(outcomes, "h200", Here(("NVIDIA H200",), 1, {}))
    assert "(the measurement of nvidia-resnet50-a100-80gb-amp-1gpu, counted once there)" in page
