"""The full plan's verdict reads only the rows each claim's protocol names. A full HFTA plan trains more
workloads (the encoder and MLP beside ResNet-18) in FP32 beside AMP, each with its own speedup row: a
claim whose protocol is ResNet-18 in AMP must read the same from the full plan's table as from the quick
plan's, whatever those other rows hold (the encoder's fused array trained at 0.63x MPS on an H100)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gpurepro.compare.pack import unpack
from gpurepro.profiles import load_profile
from gpurepro.verdict.rejudge import judge_run

from .conftest import ROOT

SHIPPED = ROOT / "reference-runs" / "h200-quick-2026-11-29.tar.gz"


def _full_plan_rows(table: pd.DataFrame, workloads: list[str], precisions: list[str]) -> pd.DataFrame:
    """The quick run's rows again for every other workload and precision of the full plan, each figure
    far below 1 (a speedup that would fail any HFTA claim reading it)."""
    others = []
    for workload in workloads:
        for precision in precisions:
            if (workload, precision) in set(zip(table["workload"], table["precision"], strict=True)):
                continue
            copy = table.assign(workload=workload, precision=precision)
            copy.loc[copy["metric"] == "speedup", "value"] *= 0.05
            others.append(copy)
    return pd.concat([table, *others], ignore_index=True)


def _hfta_readings(device: Path) -> dict[str, tuple]:
    """Each HFTA claim's result, values and intervals as this checkout judges the run's tables."""
    return {
        o.claim.id: (o.result, o.values, o.intervals) for o in judge_run(device) if o.claim.study == "hfta"
    }


def test_hfta_claims_read_only_their_protocols_workload_and_precision(tmp_path: Path) -> None:
    device = unpack(SHIPPED, tmp_path / "run")
    quick = _hfta_readings(device)
    hfta = load_profile("h100")["hfta"]  # the full plan's sweep on the profile the plan's figures are for
    assert len(hfta["workloads"]) > 1 and len(hfta["precisions"]) > 1
    for name in ("hfta_speedup", "hfta_processes"):
        path = device / "tables" / f"{name}.csv"
        _full_plan_rows(pd.read_csv(path), hfta["workloads"], hfta["precisions"]).to_csv(path, index=False)
    full = _hfta_readings(device)
    assert quick and full == quick
