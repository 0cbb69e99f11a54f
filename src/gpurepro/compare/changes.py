"""What changed between two runs: their provenance side by side, only the fields that differ.

Each run's value of a field is the set of distinct values over all its sidecars (a run may span two
GPUs, or a driver update mid-run), written sorted and joined. Where the runs measured different GPUs,
the reference rates' ratio B/A (tables/reference.csv, median) follows: the yardstick for every study's
ratios, as the verdict scales absolute claims by it. Where both runs kept their configs (config/<hash>.yaml,
written as each run starts), the config keys whose values differ follow too.

The GPU's thermal state is a measured quantity rather than a setting: each run's median over its points
(with the range) of the temperature its points started at (where their cool-downs ended) and of its
idle power, shown where the medians differ by the threshold THERMAL gives each. A card that sits 10 C
warmer at rest (a warmer room, a busier chassis) draws more power at every point and reads hotter in
every temperature row: this row names the cause of those changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from .. import provenance
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


def _idle_power(sidecar: dict[str, Any]) -> list[Any]:
    return [idle.get("power_w") for idle in (sidecar.get("measurement", {}).get("idle") or {}).values()]


# Thermal state, per point: its getter and the smallest difference of the runs' medians shown (an
# absolute one in C; for power the 5% noise floor of compare's power grades, as a fraction).
THERMAL: dict[str, tuple[Getter, float, bool]] = {
    "GPU temperature at the points' start (C)": (_at("measurement", "cooldown", "end_temp_c"), 2.0, False),
    "idle power (W)": (_idle_power, 0.05, True),
}


def summarise(run: Run) -> dict[str, str]:
    """Each field's distinct values over the run's sidecars ('' where none records it)."""
    sidecars = run.sidecars()
    summary = {}
    for field, get in FIELDS.items():
        values = {str(value) for sidecar in sidecars for value in get(sidecar) if value is not None}
        summary[field] = ", ".join(sorted(values))
    return summary


def thermal_rows(a: Run, b: Run) -> list[dict[str, str]]:
    """A row per thermal quantity whose medians over the runs' points differ by its THERMAL threshold."""
    rows = []
    sidecars = [run.sidecars() for run in (a, b)]  # read once, for every quantity
    for field, (get, shown, relative) in THERMAL.items():
        values = [
            pd.Series([v for sidecar in side for v in get(sidecar) if isinstance(v, (int, float))])
            for side in sidecars
        ]
        if any(v.empty for v in values):
            continue
        first, second = (float(v.median()) for v in values)
        difference = abs(second - first) / abs(first) if relative and first else abs(second - first)
        if difference >= shown:
            a_text, b_text = (f"{v.median():.4g} ({v.min():.4g}-{v.max():.4g})" for v in values)
            note = "median over the points (range): temperature and power rows move with it"
            rows.append({"field": field, "a": a_text, "b": b_text, "note": note})
    return rows


def reference_ratios(a: Run, b: Run) -> pd.DataFrame:
    """The reference rates' ratio B/A with its interval, graded like any metric (empty without them)."""
    if "reference" not in a.tables or "reference" not in b.tables:
        return pd.DataFrame()
    rows = pd.DataFrame(compare_table("reference", a, b))
    return rows[rows["statistic"] == "median"] if "statistic" in rows else rows


def run_config(run: Run) -> dict[str, set[str]]:
    """Each config key's values over the configs the run's sidecars name (config/<config_hash>.yaml)."""
    digests = {str(value) for sidecar in run.sidecars() for value in _at("config_hash")(sidecar) if value}
    return provenance.recorded_config_values(run.path, digests)


def config_rows(a: Run, b: Run) -> list[dict[str, str]]:
    """A row per config key whose values differ, where both runs kept their configs."""
    first, second = run_config(a), run_config(b)
    if not first or not second:
        return []
    shown = {
        side: {key: ", ".join(sorted(v)) for key, v in values.items()}
        for side, values in (("a", first), ("b", second))
    }
    return [
        {
            "field": f"config {key}",
            "a": shown["a"].get(key, "(not set)"),
            "b": shown["b"].get(key, "(not set)"),
            "note": "",
        }
        for key in sorted({*first, *second})
        if first.get(key) != second.get(key)
    ]


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
    rows += thermal_rows(a, b)
    rows += config_rows(a, b)
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
