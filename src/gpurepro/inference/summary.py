"""Aggregate raw inference files into a tidy long table: one row per (point, metric, statistic).

A point is (model, sequence length for BERT, batch size, precision, mode, run). Latency statistics are
over the Timer's blocks (each a mean of back-to-back inferences; see measure.py); energy comes from the
sidecar's energy window, throttle reasons from the reps and from the samples of the energy window in the
trace saved beside the raw file. A failed point keeps one row, with its status and reason.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..nvml import THROTTLE_MASK, describe_reasons
from ..results import read_sidecar
from ..tables import describe, long_frame, point_keys, single

POINT_KEYS = ["family", "model", "seq_len", "batch_size", "precision", "mode", "run"]
MODEL_ORDER = ["deit-t", "deit-s", "deit-b", "bert-b", "bert-l"]
PRECISION_ORDER = ["fp32", "tf32", "fp16", "bf16"]
MODE_ORDER = ["eager", "compile", "cudagraph"]


def trace_path(raw: Path | str) -> Path:
    """`x.csv` -> `x.telemetry.csv`, the trace the same job wrote (workflow/rules/common.smk raw_outputs)."""
    raw = Path(raw)
    return raw.with_name(f"{raw.stem}.telemetry.csv")


def _energy_window_reasons(raw: Path | str, device: str) -> tuple[list[str], float]:
    """Clock-event reasons seen in the energy window's samples, and the fraction of them throttled."""
    path = trace_path(raw)
    if not path.is_file():
        return [], math.nan
    trace = pd.read_csv(path)
    if trace.empty or "phase" not in trace:
        return [], math.nan
    window = trace[(trace["phase"] == "energy") & (trace["device"].astype(str) == device)]
    masks = window["clock_event_reasons"].dropna().astype(int)
    if masks.empty:
        return [], math.nan
    seen = int(np.bitwise_or.reduce(masks.to_numpy()))
    throttled = float(((masks & THROTTLE_MASK) != 0).mean())
    return [r for r in describe_reasons(seen).split("|") if r], throttled


def _reasons_of_reps(reps: pd.DataFrame) -> list[str]:
    names = reps.get("clock_event_names", pd.Series(dtype=str)).dropna()
    return sorted({r for value in names for r in str(value).split("|") if r and r != "unknown"})


def _keys(reps: pd.DataFrame, sidecar: dict[str, Any], path: Path | str) -> dict[str, Any]:
    return point_keys("inference", reps, sidecar, path, POINT_KEYS)


def summarise_file(path: Path | str) -> pd.DataFrame:
    reps = pd.read_csv(path)
    sidecar = read_sidecar(path)
    keys = _keys(reps, sidecar, path)
    if keys["status"] != "ok":
        return long_frame(keys, [single("latency", math.nan, "ms", "median")])
    batch = int(keys["batch_size"])
    rows = describe(reps["ms"], "latency", "ms")
    rows.append(single("runs_per_block", float(reps["runs"].iloc[0]), "runs"))
    rows.append(single("timed_inferences", float(reps["runs"].sum()), "runs"))
    rows.append(single("throughput", batch / (float(reps["ms"].median()) / 1e3), "samples/s", "median"))
    rows.append(single("parameters", float(reps["parameters"].iloc[0]), "1"))
    rows.append(
        single("output_max_abs_diff_vs_eager", float(reps["output_max_abs_diff_vs_eager"].max()), "1")
    )
    rows += describe(reps["power_w_median"], "power_during_latency", "W")[:1]
    rows.append(single("throttled_blocks", float(reps["throttled"].sum()), "blocks"))
    reasons = _reasons_of_reps(reps)
    rows.append(single("clock_event_reasons_latency", float(len(reasons)), "|".join(reasons) or "none"))

    measurement = sidecar.get("measurement", {})
    idle = measurement.get("idle", {}).get(keys["device"], {})
    rows.append(single("idle_power", idle.get("power_w", math.nan), "W"))
    energy = measurement.get("energy", {}).get(keys["device"])
    keys["energy_method"] = energy["method"] if energy else "unavailable"
    if energy:
        per_op, above = energy["energy_per_op_j"], energy["energy_per_op_above_idle_j"]
        rows.append(single("energy_window", energy["duration_s"], "s"))
        rows.append(single("energy_window_inferences", float(energy["operations"]), "runs"))
        rows.append(single("energy_window_reliable", float(energy["reliable"]), "bool"))
        rows.append(single("energy_window_power", energy["avg_power_w"], "W", "mean"))
        # what inference adds to the idle draw, as the published artifacts report power: the energy
        # window's average power (NVML's energy counter) less the idle baseline before the model existed
        above_idle = energy["avg_power_w"] - idle.get("power_w", math.nan)
        rows.append(single("power_above_idle", above_idle, "W", "mean"))
    else:
        per_op = above = math.nan
    rows.append(single("energy_per_inference", per_op, "J", "gross"))
    rows.append(single("energy_per_inference", above, "J", "above_idle"))
    rows.append(single("energy_per_sample", per_op / batch, "J", "gross"))
    rows.append(single("energy_per_sample", above / batch, "J", "above_idle"))
    window_reasons, throttled = _energy_window_reasons(path, keys["device"])
    rows.append(single("throttled_samples_energy_window", throttled, "fraction"))
    rows.append(
        single(
            "clock_event_reasons_energy_window",
            float(len(window_reasons)),
            "|".join(window_reasons) or "none",
        )
    )
    rows.append(single("telemetry_rate", measurement.get("telemetry", {}).get("achieved_rate_hz"), "Hz"))
    return long_frame(keys, rows)


def summarise(paths: list[str]) -> pd.DataFrame:
    table = pd.concat([summarise_file(p) for p in paths], ignore_index=True)
    if "energy_method" not in table:
        table["energy_method"] = None
    order = {
        "model": {m: i for i, m in enumerate(MODEL_ORDER)},
        "precision": {p: i for i, p in enumerate(PRECISION_ORDER)},
        "mode": {m: i for i, m in enumerate(MODE_ORDER)},
    }

    def sort_key(column: pd.Series) -> pd.Series:
        return column.map(order[column.name]) if column.name in order else column

    columns = [c for c in ["model", "seq_len", "batch_size", "precision", "mode", "run"] if c in table]
    return table.sort_values(columns, key=sort_key, kind="stable").reset_index(drop=True)
