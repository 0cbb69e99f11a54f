"""Aggregate raw SGEMM files (one row per rep, plus provenance sidecars) into a tidy long table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..results import read_sidecar
from ..tables import describe, long_frame, single
from ..telemetry.align import REP_TELEMETRY_METRICS

# Per rep: the timing and the telemetry attached to it (column in the raw file, metric name, unit).
REP_METRICS = [("ms", "time", "ms"), ("tflops", "rate", "TFLOP/s"), *REP_TELEMETRY_METRICS]


def summarise_file(path: Path | str) -> pd.DataFrame:
    reps = pd.read_csv(path)
    sidecar = read_sidecar(path)
    gpu = (sidecar.get("gpus") or [{}])[0]
    first = reps.iloc[0]
    keys = {
        "study": "sgemm",
        "profile": first["profile"],
        "device": str(first["device"]),
        "gpu_name": gpu.get("name", "cpu"),
        "gpu_uuid": gpu.get("uuid"),
        "backend": first["backend"],
        "n": int(first["n"]),
        "source_file": Path(path).name,
    }
    rows = []
    for column, metric, unit in REP_METRICS:
        rows += describe(reps[column], metric, unit)
    rows.append(single("throttled_reps", float(reps["throttled"].sum()), "reps"))
    rows.append(single("verify_rel_err", float(reps["verify_rel_err"].max()), "1", "max"))
    measurement = sidecar.get("measurement", {})
    idle = measurement.get("idle", {}).get(keys["device"], {})
    rows.append(single("idle_power", idle.get("power_w", float("nan")), "W"))
    energy = measurement.get("energy", {}).get(keys["device"])
    if energy:
        rows.append(single("energy_per_op", energy["energy_per_op_j"], "J", "gross"))
        rows.append(single("energy_per_op", energy["energy_per_op_above_idle_j"], "J", "above_idle"))
        rows.append(single("energy_window", energy["duration_s"], "s"))
        rows.append(single("energy_window_reliable", float(energy["reliable"]), "bool"))
        rows.append(single("energy_window_power", energy["avg_power_w"], "W", "mean"))
    rows.append(single("telemetry_rate", measurement.get("telemetry", {}).get("achieved_rate_hz"), "Hz"))
    return long_frame(keys, rows)


def summarise(paths: list[str]) -> pd.DataFrame:
    frames = [summarise_file(p) for p in paths]
    return pd.concat(frames, ignore_index=True).sort_values(["backend", "n"], kind="stable")
