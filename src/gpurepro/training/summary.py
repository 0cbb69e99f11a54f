"""Throughput of a training run, and the ddp table: images/s per GPU count and scaling efficiency.

A run's rate is its timed images over its timed seconds (the warm-up row left out), as the Horovod
benchmark reported it. Speedup is the k-GPU run's total images/s over the 1-GPU run's of the same point
(POINT_KEYS: a tf32 run compared on one GPU is never the baseline of the fp16 series); scaling
efficiency is the speedup over k (100% = every GPU as fast as one alone).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..results import read_raw, read_sidecar
from ..tables import describe, long_frame, single

# Columns that make two raw files the same point but for the GPU count.
POINT_KEYS = ["profile", "model", "data", "image_size", "num_classes", "precision", "channels_last",
              "batch_per_gpu"]  # fmt: skip


def run_summary(rows: pd.DataFrame, world_size: int) -> dict[str, Any]:
    """Images/s total and per GPU over the timed intervals, and the warm-up it leaves out."""
    timed = rows[rows["phase"] == "timed"]
    warmup = rows[rows["phase"] == "warmup"]
    images, seconds = int(timed["images"].sum()), float(timed["seconds"].sum())
    total = images / seconds if seconds > 0 else math.nan
    return {
        "world_size": world_size,
        "timed_iterations": int(timed["iterations"].sum()),
        "timed_images": images,
        "timed_seconds": seconds,
        "images_per_s": total,
        "images_per_s_per_gpu": total / world_size,
        "warmup_iterations": int(warmup["iterations"].sum()),
        "warmup_seconds": float(warmup["seconds"].sum()),
    }


def _point(path: Path | str) -> tuple[dict[str, Any], pd.DataFrame]:
    rows = read_raw(path)
    sidecar = read_sidecar(path)
    first = rows.iloc[0]
    gpus = sidecar.get("gpus") or [{}]
    keys: dict[str, Any] = {"study": "ddp", "gpu_name": gpus[0].get("name", "cpu")}
    for column in POINT_KEYS:
        value = first.get(column, math.nan)
        keys[column] = None if pd.isna(value) else value
    keys["gpus"] = int(first["world_size"])
    keys["devices"] = str(first["devices"])
    keys["status"] = first.get("status", "ok")
    reason = first.get("reason", "")
    keys["reason"] = "" if pd.isna(reason) else str(reason)
    keys["source_file"] = Path(path).name
    return keys, rows


def summarise(paths: list[str]) -> pd.DataFrame:
    """One block of rows per raw file (GPU count), with speedup and efficiency against the 1-GPU run
    of the same point; NaN where that run is missing or failed."""
    points = [_point(p) for p in paths]
    totals: dict[tuple, float] = {}
    for keys, rows in points:
        if keys["status"] == "ok":
            totals[tuple(keys[k] for k in POINT_KEYS), keys["gpus"]] = run_summary(rows, keys["gpus"])[
                "images_per_s"
            ]
    frames = []
    for keys, rows in sorted(points, key=lambda point: point[0]["gpus"]):
        if keys["status"] != "ok":
            frames.append(long_frame(keys, [single("throughput", math.nan, "images/s", "total")]))
            continue
        summary = run_summary(rows, keys["gpus"])
        one = totals.get((tuple(keys[k] for k in POINT_KEYS), 1), math.nan)
        speedup = summary["images_per_s"] / one
        timed = rows[rows["phase"] == "timed"]
        metrics = [
            single("throughput", summary["images_per_s"], "images/s", "total"),
            single("throughput", summary["images_per_s_per_gpu"], "images/s", "per_gpu"),
            single("speedup_vs_1_gpu", speedup, "x"),
            single("scaling_efficiency", speedup / keys["gpus"] * 100, "%"),
            *describe(timed["seconds"] / timed["iterations"] * 1e3, "step_time", "ms"),
            single("timed_iterations", float(summary["timed_iterations"]), "iterations"),
            single("warmup_iterations", float(summary["warmup_iterations"]), "iterations"),
            single("final_loss", float(timed["loss"].iloc[-1]), "1"),
        ]
        frames.append(long_frame(keys, metrics))
    return pd.concat(frames, ignore_index=True)
