"""Raw HFTA points to tidy tables.

`hfta.csv`: one row per (point, metric, statistic). A point is (workload, mode, step, precision, B,
repeat), its step `stock` (torch's eager step), `graphed` (each step one CUDA graph) or `compiled`
(torch.compile, graphed too on a GPU). Its throughput, wall time, timed steps (at least the asked
steps, more until the unit's minimum time had passed) and timed window (first start to last end of its
units), peak memory, power, energy per sample and DCGM means (over the training window, where DCGM
exists), and `normalised_throughput`: its throughput over the stock serial fp32 throughput of the same
workload, B and repeat, as HFTA plots it. Energy per sample is read only from energy windows at least
the minimum long (NVML's counter updates about every 100 ms), else NaN. A point that ran out of memory,
failed or was skipped keeps one row with its status and reason, so the largest B that fits is visible.

`hfta_speedup.csv`: per workload (at one batch size and input shape) and precision, each mode's and
step's peak throughput over B (median over repeats at each B) and the largest B that fitted in every
repeat, and the fused array's speedup, with each step it ran, over each baseline with each step it ran
(columns `step` and `baseline_step`): statistic `max` compares peaks (each at its own best B, as HFTA
reports), statistic `at_best_b` compares both at the fused array's best B. Stock over stock is the
paper's comparison; the graphed and compiled rows say what those steps change on either side. Each
speedup has its 95% interval across processes (`max_ci_low`, `max_ci_high`, `at_best_b_ci_low`, ...):
the fused point's and the baseline point's throughputs paired by run where both ran in at least five
of the same runs (process_stats.PAIRED_MIN_ROUNDS), else as independent groups of processes
(process_stats.ratio_interval), NaN where a side ran in one process only; `processes` and
`baseline_processes` say how many processes each side's point ran in, `runs` and `baseline_runs` which,
and `gpu_uuids` and `baseline_gpu_uuids` the GPU each of them ran on, in the same order (process_table's
convention; empty where none recorded one).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..process_stats import ratio_interval
from ..process_table import gpu_list, gpus_by_run
from ..results import read_raw, read_sidecar
from ..tables import long_frame, point_keys, single
from . import MODES, PRECISIONS, STEP_STOCK, STEPS, WORKLOADS
from .dcgm_summary import dcgm_means

POINT_KEYS = ["workload", "mode", "step", "precision", "b", "run"]
# What else must match for two points to be compared (normalised throughput, speedups).
SAME_SETUP = ["profile", "workload", "batch_size", "image_size", "seq_len"]
BASELINES = ("serial", "concurrent", "mps")
GIB = 2**30
# A point over its processes (process_table): its keys without the run, and what it trained.
PROCESS_KEYS = ["study", "profile", "gpu_name", *POINT_KEYS[:-1], "batch_size", "image_size",
                "seq_len", "optimizer", "lr", "data"]  # fmt: skip
_DESCRIBED = ["batch_size", "image_size", "seq_len", "optimizer", "lr", "timed_steps",
              "warmup_steps_per_model", "data"]  # fmt: skip


def _keys(rows: pd.DataFrame, sidecar: dict[str, Any], path: Path | str) -> dict[str, Any]:
    keys = point_keys("hfta", rows, sidecar, path, [*POINT_KEYS, *_DESCRIBED])
    keys["step"] = keys["step"] or STEP_STOCK  # points measured before steps could be graphed
    return keys


def step_order(steps: pd.Series | list[str]) -> list[str]:
    """The steps present, in the order tables and plots show them: stock, graphed, compiled, others."""
    known = list(STEPS)
    present = list(dict.fromkeys(steps))
    return [s for s in known if s in present] + sorted(s for s in present if s not in known)


def _timed_window(rows: pd.DataFrame) -> float:
    """Seconds from the first unit's first timed step to the last unit's end: the energy window."""
    return float(rows["t_end_unix_s"].max() - rows["t_start_unix_s"].min())


def _energy_per_sample(rows: pd.DataFrame, sidecar: dict[str, Any], device: str) -> float:
    """Gross energy per trained sample: serial sums each model's own stretch (the time between models is
    not training), the others take the job's energy window over the span of their units. NaN where a
    window is shorter than the minimum energy window (the sidecar's `min_energy_window_s` where the
    point recorded it, else the harness's own reading of the window): the counter's updates would
    dominate it."""
    samples = float(rows["samples"].sum())
    minimum = sidecar.get("workload", {}).get("min_energy_window_s")
    if rows["mode"].iloc[0] == "serial":
        energy = pd.to_numeric(rows.get("energy_j", pd.Series(dtype=float)), errors="coerce")
        stretches = rows["t_end_unix_s"] - rows["t_start_unix_s"]
        if minimum is not None and (stretches < float(minimum)).any():
            return math.nan
        return float(energy.sum()) / samples if len(energy) and energy.notna().all() else math.nan
    window = sidecar.get("measurement", {}).get("energy", {}).get(device)
    if not window or window.get("energy_j") is None or window.get("reliable") is False:
        return math.nan
    if minimum is not None and _timed_window(rows) < float(minimum):
        return math.nan
    return window["energy_j"] / samples


def summarise_file(path: Path | str) -> pd.DataFrame:
    rows = read_raw(path)
    sidecar = read_sidecar(path)
    keys = _keys(rows, sidecar, path)
    if keys["status"] != "ok":
        return long_frame({**keys, "dcgm_note": ""}, [single("throughput", math.nan, "samples/s")])
    start, end = float(rows["t_start_unix_s"].min()), float(rows["t_end_unix_s"].max())
    keys["dcgm_note"], dcgm = dcgm_means(path, sidecar, start, end)
    out = [
        single("throughput", float(rows["throughput_samples_per_s"].iloc[0]), "samples/s"),
        single("wall_time", float(rows["wall_s"].iloc[0]), "s"),
        single("samples", float(rows["samples"].sum()), "samples"),
        # timed steps of the unit that ran fewest (every unit ran at least this many)
        single("timed_steps", float(rows["steps"].min()), "steps", "min"),
        single("timed_window", _timed_window(rows), "s"),
        single("processes", float(rows["processes"].iloc[0]), "processes"),
        single(
            "peak_memory",
            float(rows["peak_memory_bytes"].max()) / GIB,
            "GiB",
            str(rows["memory_kind"].iloc[0]),
        ),
        single("final_loss", float(rows["final_loss"].mean()), "1", "mean"),
        single("power", float(rows["power_w_median"].median()), "W", "median"),
        single("throttled_units", float(rows["throttled"].sum()), "units"),
        single("energy_per_sample", _energy_per_sample(rows, sidecar, keys["device"]), "J", "gross"),
    ]
    out += [single(f"dcgm_{field}", mean, unit, "mean") for field, (mean, unit) in sorted(dcgm.items())]
    return long_frame(keys, out)


def _order(table: pd.DataFrame) -> pd.DataFrame:
    steps = step_order(table["step"]) if "step" in table else list(STEPS)
    order = {"workload": WORKLOADS, "mode": MODES, "step": steps, "precision": PRECISIONS}

    def key(column: pd.Series) -> pd.Series:
        if column.name in order:
            return column.map({v: i for i, v in enumerate(order[column.name])})
        return column

    columns = [c for c in ["workload", "precision", "mode", "step", "b", "run"] if c in table]
    return table.sort_values(columns, key=key, kind="stable").reset_index(drop=True)


def normalise(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of normalised_throughput: each point's throughput over stock serial fp32's at the same B and
    repeat, or, where serial ran at other B values only (sweep.py: its rate is one model's at any B),
    over the median of those for the repeat (NaN where no serial fp32 point fitted)."""
    throughput = table[table["metric"] == "throughput"]
    serial = throughput[
        (throughput["mode"] == "serial")
        & (throughput["precision"] == "fp32")
        & (throughput["step"] == STEP_STOCK)
    ]
    any_b = [*SAME_SETUP, "run"]
    candidates = serial[[*any_b, "b", "value"]].rename(columns={"b": "serial_b", "value": "reference"})
    pairs = throughput[[*any_b, "b"]].reset_index().merge(candidates, on=any_b, how="left")
    at_same_b = pairs[pairs["serial_b"] == pairs["b"]].groupby("index")["reference"].first()
    reference = at_same_b.reindex(throughput.index).fillna(pairs.groupby("index")["reference"].median())
    merged = throughput.copy()
    merged["value"] = merged["value"] / reference
    merged["metric"], merged["statistic"], merged["unit"] = "normalised_throughput", "over_serial_fp32", "x"
    return merged


def summarise(paths: list[str]) -> pd.DataFrame:
    """The tidy table of every raw point given."""
    table = pd.concat([summarise_file(p) for p in paths], ignore_index=True)
    table = pd.concat([table, normalise(table)], ignore_index=True)
    return _order(table)


def _curve(rows: pd.DataFrame) -> pd.Series:
    """Median throughput over repeats at each B, of the points that ran."""
    ok = rows[rows["status"] == "ok"]
    return ok.groupby("b")["value"].median().dropna().sort_index()


def _largest_fitting(rows: pd.DataFrame) -> float:
    """The largest B at which every repeat ran (NaN if none did)."""
    fits = rows.groupby("b")["status"].agg(lambda s: bool((s == "ok").all()))
    return float(fits[fits].index.max()) if fits.any() else math.nan


def _by_run(rows: pd.DataFrame) -> dict[int, dict[int, float]]:
    """Throughput of each B in each run (process) that ran it: B -> run -> samples/s."""
    ok = rows[rows["status"] == "ok"].dropna(subset=["value"])
    out: dict[int, dict[int, float]] = {}
    for (b, run), value in ok.groupby(["b", "run"])["value"].first().items():
        out.setdefault(int(b), {})[int(run)] = float(value)
    return out


def _gpus_by_b(rows: pd.DataFrame) -> dict[int, dict[int, str]]:
    """The GPU UUID of each run (process) at each B: B -> run -> UUID."""
    ok = rows[rows["status"] == "ok"]
    return {int(b): gpus_by_run(at_b) for b, at_b in ok.groupby("b")}


def _sides(
    fused: dict[int, float],
    baseline: dict[int, float],
    fused_gpus: dict[int, str],
    baseline_gpus: dict[int, str],
) -> dict[str, Any]:
    """The processes behind each side of a speedup and the GPU each ran on (process_table's convention:
    `runs` and `gpu_uuids` in the same order), so the verdict can say whether the sides shared a GPU."""
    return {
        "processes": len(fused),
        "baseline_processes": len(baseline),
        "runs": ",".join(str(run) for run in fused),
        "gpu_uuids": gpu_list(fused, fused_gpus),
        "baseline_runs": ",".join(str(run) for run in baseline),
        "baseline_gpu_uuids": gpu_list(baseline, baseline_gpus),
    }


def _speedup(
    common: dict[str, Any],
    statistic: str,
    value: float,
    fused: dict[int, float],
    baseline: dict[int, float],
    gpus: tuple[dict[int, str], dict[int, str]],
) -> list[dict[str, Any]]:
    """A speedup row and the rows of its 95% interval across processes, paired by run where both points
    ran in enough of the same runs, else over the two points' processes as independent groups
    (process_stats.ratio_interval); NaN ends where a side ran in one process."""
    interval = ratio_interval(fused, baseline)
    # the processes behind each side, so a reading of the speedup says at how many it stands and where
    common = {**common, **_sides(fused, baseline, *gpus)}
    return [
        {**common, "statistic": statistic, "value": value},
        {**common, "statistic": f"{statistic}_ci_low", "value": interval.low},
        {**common, "statistic": f"{statistic}_ci_high", "value": interval.high},
    ]


def _speedup_rows(
    base: dict[str, Any],
    curves: dict[tuple[str, str], pd.Series],
    runs: dict[tuple[str, str], dict[int, dict[int, float]]],
    gpus: dict[tuple[str, str], dict[int, dict[int, str]]],
    fused_step: str,
) -> list[dict[str, Any]]:
    """The speedups of the fused array's curve (with `fused_step`) over every baseline curve, each step
    of it, with their intervals across processes."""
    fused = curves[("hfta", fused_step)]
    fused_runs = runs[("hfta", fused_step)]
    fused_gpus = gpus[("hfta", fused_step)]
    best_b = int(fused.idxmax())
    out = []
    for (baseline, baseline_step), curve in curves.items():
        if baseline not in BASELINES or curve.empty:
            continue
        common = {
            **base, "mode": "hfta", "step": fused_step, "baseline": baseline, "baseline_step": baseline_step,
            "b": best_b, "metric": "speedup", "unit": "x",
        }  # fmt: skip
        baseline_runs = runs[(baseline, baseline_step)]
        baseline_gpus = gpus[(baseline, baseline_step)]
        peak_b = int(curve.idxmax())
        out += _speedup(
            {**common, "baseline_b": peak_b},
            "max",
            fused.max() / curve.max(),
            fused_runs.get(best_b, {}),
            baseline_runs.get(peak_b, {}),
            (fused_gpus.get(best_b, {}), baseline_gpus.get(peak_b, {})),
        )
        at_best = _at(curve, best_b, baseline)
        if at_best is not None:
            baseline_b, rate = at_best
            out += _speedup(
                {**common, "baseline_b": baseline_b},
                "at_best_b",
                fused.max() / rate,
                fused_runs.get(best_b, {}),
                baseline_runs.get(baseline_b, {}),
                (fused_gpus.get(best_b, {}), baseline_gpus.get(baseline_b, {})),
            )
    return out


def _at(curve: pd.Series, b: int, baseline: str) -> tuple[int, float] | None:
    """The baseline's throughput at B=b, and the B it was measured at: b itself where the curve has it;
    for serial, whose rate is one model's at any B (sweep.py measures it at its serial_b_values only), the
    measured B nearest b; None where neither applies."""
    if b in curve.index:
        return b, float(curve[b])
    if baseline != "serial":
        return None
    nearest = min(curve.index, key=lambda measured: (abs(measured - b), measured))
    return int(nearest), float(curve[nearest])


def speedups(table: pd.DataFrame) -> pd.DataFrame:
    """The speedup summary (see the module's docstring) from the tidy table."""
    throughput = table[table["metric"] == "throughput"]
    out: list[dict[str, Any]] = []
    for setup, group in throughput.groupby([*SAME_SETUP, "precision"], sort=False, dropna=False):
        base = {
            "study": "hfta", **dict(zip([*SAME_SETUP, "precision"], setup, strict=True)),
            "gpu_name": group["gpu_name"].iloc[0], "repeats": int(group["run"].nunique()),
        }  # fmt: skip
        curves: dict[tuple[str, str], pd.Series] = {}
        runs: dict[tuple[str, str], dict[int, dict[int, float]]] = {}
        gpus: dict[tuple[str, str], dict[int, dict[int, str]]] = {}
        for (mode, step), rows in group.groupby(["mode", "step"]):
            curves[(mode, step)] = curve = _curve(rows)
            runs[(mode, step)] = _by_run(rows)
            gpus[(mode, step)] = _gpus_by_b(rows)
            which = {"mode": mode, "step": step, "statistic": "max"}
            out.append(
                {
                    **base,
                    **which,
                    "metric": "largest_b_fitting",
                    "value": _largest_fitting(rows),
                    "unit": "models",
                }
            )
            if len(curve):
                peak = {"b": int(curve.idxmax()), "metric": "peak_throughput", "value": float(curve.max())}
                out.append({**base, **which, **peak, "unit": "samples/s"})
        for step in step_order(group["step"]):
            fused = curves.get(("hfta", step))
            if fused is not None and not fused.empty:
                out += _speedup_rows(base, curves, runs, gpus, step)
    columns = ["study", "profile", "gpu_name", "workload", "batch_size", "image_size", "seq_len",
               "precision", "mode", "step", "baseline", "baseline_step", "b", "baseline_b", "repeats",
               "processes", "baseline_processes", "runs", "gpu_uuids", "baseline_runs", "baseline_gpu_uuids",
               "metric", "statistic", "value", "unit"]  # fmt: skip
    return _order(pd.DataFrame(out, columns=columns))
