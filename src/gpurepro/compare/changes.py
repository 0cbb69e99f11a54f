"""What changed between two runs: their provenance side by side, only the fields that differ.

Each run's value of a field is the set of distinct values over all its sidecars (a run may span two
GPUs, or a driver update mid-run), written sorted and joined. Where the runs measured different GPUs,
the reference rates' ratio B/A (tables/reference.csv, median) follows: the yardstick for every study's
ratios, as the verdict scales absolute claims by it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from .match import compare_table
from .runs import Run

Getter = Callable[[dict[str, Any]], list[Any]]


def _gpu(field: str) -> Getter:
    return lambda sidecar: [gpu.get(field) for gpu in sidecar.get("gpus") or []]


def _at(*path: str) -> Getter:
    def get(sidecar: dict[str, Any]) -> list[Any]:
        value: Any = sidecar
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return [value]

    return get


def _window_clocks(sidecar: dict[str, Any]) -> list[Any]:
    """The median SM clock of each device's energy window (the clock the work ran at)."""
    medians = sidecar.get("measurement", {}).get("window_medians", {})
    return [windows.get("energy", {}).get("sm_clock_mhz") for windows in medians.values()]


FIELDS: dict[str, Getter] = {
    "GPU model": _gpu("name"),
    "GPU UUID": _gpu("uuid"),
    "GPU serial": _gpu("serial"),
    "driver": _gpu("driver_version"),
    "CUDA (driver)": _gpu("cuda_driver_version"),
    "compute capability": _gpu("compute_capability"),
    "power limit (W)": _gpu("power_limit_w"),
    "enforced power limit (W)": _gpu("power_limit_enforced_w"),
    "max SM clock (MHz)": _gpu("sm_clock_max_mhz"),
    "application SM clock (MHz)": _gpu("app_sm_clock_mhz"),
    "SM clock in energy windows (MHz)": _window_clocks,
    "persistence mode": _gpu("persistence_mode"),
    "ECC": _gpu("ecc_mode"),
    "MIG": _gpu("mig_mode"),
    "torch": _at("software", "torch"),
    "torch CUDA": _at("software", "torch_cuda"),
    "cuDNN": _at("software", "cudnn"),
    "Python": _at("software", "python"),
    "gpurepro": _at("software", "gpurepro"),
    "container engine": _at("container", "engine"),
    "container image": _at("container", "image_id"),
    "config hash": _at("config_hash"),
    "git commit": _at("git", "commit"),
    "git dirty": _at("git", "dirty"),
    "host": _at("host", "hostname"),
    "platform": _at("host", "platform"),
    "profile": _at("profile"),
}
COLUMNS = ["field", "a", "b", "note"]


def summarise(run: Run) -> dict[str, str]:
    """Each field's distinct values over the run's sidecars ('' where none records it)."""
    sidecars = run.sidecars()
    summary = {}
    for field, get in FIELDS.items():
        values = {str(value) for sidecar in sidecars for value in get(sidecar) if value is not None}
        summary[field] = ", ".join(sorted(values))
    return summary


def reference_ratios(a: Run, b: Run) -> pd.DataFrame:
    """The reference rates' ratio B/A with its interval, graded like any metric (empty without them)."""
    if "reference" not in a.tables or "reference" not in b.tables:
        return pd.DataFrame()
    rows = pd.DataFrame(compare_table("reference", a, b))
    return rows[rows["statistic"] == "median"] if "statistic" in rows else rows


def changes(a: Run, b: Run) -> pd.DataFrame:
    """The fields whose values differ, and the reference rates' ratios where the GPU model differs."""
    first, second = summarise(a), summarise(b)
    rows = [
        {
            "field": field,
            "a": first[field] or "(not recorded)",
            "b": second[field] or "(not recorded)",
            "note": "",
        }
        for field in FIELDS
        if first[field] != second[field]
    ]
    if first["GPU model"] != second["GPU model"]:
        for ref in reference_ratios(a, b).to_dict("records"):
            note = (
                f"B/A {ref['ratio']:.3g}: {ref['summary']}" if pd.notna(ref.get("ratio")) else ref["summary"]
            )
            rows.append(
                {
                    "field": f"reference rate {ref['metric']} ({ref['unit']})",
                    "a": f"{ref['a_value']:.4g}",
                    "b": f"{ref['b_value']:.4g}",
                    "note": note,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
