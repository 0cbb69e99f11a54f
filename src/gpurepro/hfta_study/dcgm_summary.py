"""DCGM metrics of an HFTA point, summarised for its row of the study's table: every measuring job samples
DCGM beside its telemetry where DCGM exists (`--dcgm-out auto`: `<stem>.dcgm.csv` beside the raw table,
see gpurepro.profiling.dcgm), and its sidecar says why not where it does not. Here: the mean of each
field over the training window only (the job's idle baseline and set-up are sampled too), or that note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..profiling.dcgm import dcgm_out_path

NOT_SAMPLED = "DCGM not sampled (the job ran without --dcgm-out)"


def dcgm_means(
    raw: Path | str, sidecar: dict[str, Any], start_unix_s: float, end_unix_s: float
) -> tuple[str, dict[str, tuple[float, str]]]:
    """(note, {field: (mean over [start, end], unit)}) of the job that wrote `raw`."""
    info = sidecar.get("dcgm") or {}
    note = str(info.get("note") or NOT_SAMPLED)
    path = dcgm_out_path("auto", None, str(raw))
    if not info.get("available") or path is None or not path.is_file():
        return note, {}
    samples = pd.read_csv(path)
    window = samples[(samples["t_unix_s"] >= start_unix_s) & (samples["t_unix_s"] <= end_unix_s)]
    if window.empty:
        return f"{note}; no DCGM sample fell in the training window", {}
    means = window.groupby(["field", "unit"])["value"].mean()
    return note, {str(field): (float(mean), str(unit)) for (field, unit), mean in means.items()}
