"""The card's limits and its reference rates: `gpurepro reference` (FP32 and FP16 GEMM, memory bandwidth,
power limit) between RATE_FLOOR and the datasheet peaks of config/hardware/, and the power limit it
files equal to NVML's enforced limit, at or below the datasheet's maximum board power."""

from __future__ import annotations

import pytest

from tests.conftest import needs_gpu

from . import limits
from .conftest import GPUREPRO

pytestmark = [pytest.mark.gpu, needs_gpu]

# The profiles' reference settings at N=8192 and 1 GiB (config/devices/h200.yaml), with half the reps:
# large enough to reach the plateau rates the hardware files quote, a few seconds in all.
REFERENCE = [*GPUREPRO, "reference", str(limits.GPU), "--gemm-n", "8192", "--copy-mib", "1024"]
REFERENCE += ["--reps", "10"]


def test_the_enforced_power_limit_is_at_most_the_datasheet_board_power(card: limits.Card) -> None:
    """An administrator may lower the limit, nobody can raise it past the board's maximum power."""
    datasheet = card.peak("power_limit")
    assert 0 < card.power_limit_w <= datasheet, (
        f"{card.name}: NVML's enforced limit {card.power_limit_w} W against {card.describe('power_limit')}"
    )


@pytest.mark.parametrize("reference", ["fp32_gemm", "fp16_gemm", "memory_bandwidth"])
def test_reference_rate_between_floor_and_datasheet_peak(card: limits.Card, measured, reference: str) -> None:
    rows = measured(REFERENCE, trace=False).table
    values = rows.loc[rows["reference"] == reference, "value"].tolist()
    assert len(values) == 10, f"{reference}: {len(values)} reps filed"
    limits.assert_rate(card, reference, values, f"reference {reference} on {card.name}")


def test_reference_power_limit_is_nvmls_enforced_limit(card: limits.Card, measured) -> None:
    rows = measured(REFERENCE, trace=False).table
    filed = rows.loc[rows["reference"] == "power_limit", "value"].tolist()
    assert filed == [pytest.approx(card.power_limit_w)], f"power_limit rows {filed}"
