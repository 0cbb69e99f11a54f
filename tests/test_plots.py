"""What each study's figure shows, drawn from small tidy tables made here: its panels, series, axis labels
with units, error bars and bands, and the notes listing points that did not run, wrapped inside the figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gpurepro import cli, runtimes
from gpurepro.hfta_study import plot as hfta_plot
from gpurepro.inference import plot as inference_plot
from gpurepro.plotting import MAX_POINTS, NOTE_PT
from gpurepro.process_stats import across_processes
from gpurepro.sgemm import plot as sgemm_plot
from gpurepro.training import plot as ddp_plot
from gpurepro.variability import plot as variability_plot

OOM = "CUDA out of memory. Tried to allocate 12.00 GiB (GPU 0; 79.11 GiB total capacity; 70.2 GiB in use)"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _row(metric: str, statistic: str, value: float, unit: str, **keys) -> dict:
    return {**keys, "metric": metric, "statistic": statistic, "value": value, "unit": unit}


def _quartiles(metric: str, median: float, unit: str, **keys) -> list[dict]:
    """A described metric's p25, median and p75 rows, 10% either side of the median."""
    spread = {"p25": 0.9, "median": 1.0, "p75": 1.1}
    return [_row(metric, statistic, median * f, unit, **keys) for statistic, f in spread.items()]


def _panel(fig: Figure, title: str) -> Axes:
    (ax,) = [ax for ax in fig.axes if ax.get_title() == title]
    return ax


def _legend(fig: Figure, ax: Axes | None = None) -> set[str]:
    legends = [ax.get_legend()] if ax is not None else [*fig.legends, *(a.get_legend() for a in fig.axes)]
    return {t.get_text() for legend in legends if legend for t in legend.get_texts()}


def _said(ax: Axes) -> str:
    """What a panel with no data says instead."""
    return " ".join(t.get_text().replace("\n", " ") for t in ax.texts)


def _notes(fig: Figure) -> str:
    """The notes under the figure, checked to lie inside it and below every panel."""
    (note,) = [t for t in fig.texts if t.get_fontsize() == NOTE_PT]
    renderer = fig.canvas.get_renderer()
    box = note.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y0 >= 0, "the notes run off the figure"
    lowest = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes)
    assert box.y1 <= lowest, "the notes overlap a panel"
    return note.get_text()


def _lines(ax: Axes) -> list:
    """The series a lineplot drew: error bars are collections and markers without a line style, legend
    entries have no data."""
    return [line for line in ax.lines if line.get_linestyle() != "None" and len(line.get_xdata())]


def _points(ax: Axes) -> list:
    """The series a pointplot drew without lines: its markers (its error bars are plain lines)."""
    return [line for line in ax.lines if line.get_marker() not in ("", "None", None)]


def _bar_spans(ax: Axes) -> list[tuple[float, float]]:
    """The (low, high) of every vertical error bar drawn in a panel."""
    return sorted(
        (float(seg[:, 1].min()), float(seg[:, 1].max()))
        for collection in ax.collections
        for seg in map(np.asarray, getattr(collection, "get_segments", list)())
    )


def _sgemm_table(energy: bool) -> pd.DataFrame:
    rows = []
    for backend, scale in (("cublas", 1.0), ("tiled", 0.8)):
        for n in (4096, 8192, 16384):
            keys = {"profile": "h100", "backend": backend, "n": n}
            rows += _quartiles("rate", 40 * scale + n / 1000, "TFLOP/s", **keys)
            if energy:
                rows.append(_row("energy_per_op", "above_idle", n**3 / 1e12, "J", **keys))
                rows.append(_row("energy_window_reliable", "value", float(n > 4096), "bool", **keys))
    return pd.DataFrame(rows)


def _traces(power: bool) -> pd.DataFrame:
    frames = [
        pd.DataFrame(
            {
                "time_unix_s": 100.0 + np.arange(5) * 0.1,
                "power_w": np.full(5, 250.0) if power else np.nan,
                "util_pct": 100.0,
                "job": job,
            }
        )
        for job in ("cublas_n4096", "tiled_n4096")
    ]
    return pd.concat(frames, ignore_index=True)


def test_sgemm_rate_with_iqr_bars_energy_only_where_reliable_and_traces() -> None:
    fig = sgemm_plot.plot(_sgemm_table(energy=True), _traces(power=True))
    rate, energy = _panel(fig, "rate"), _panel(fig, "energy per product")
    trace = _panel(fig, "telemetry")
    assert rate.get_xlabel() == "N" and rate.get_ylabel() == "TFLOP/s (median, IQR bars)"
    assert [t.get_text() for t in rate.get_xticklabels()] == ["4096", "8192", "16384"]
    assert _legend(fig, rate) == {"cublas", "tiled"}
    medians = sorted(float(y) for line in _lines(rate) for y in line.get_ydata())
    expected = sorted(40 * scale + n / 1000 for scale in (1.0, 0.8) for n in (4096, 8192, 16384))
    assert medians == pytest.approx(expected)
    assert (44.096 * 0.9, 44.096 * 1.1) in [pytest.approx(span) for span in _bar_spans(rate)]  # cublas, 4096
    drawn = {float(x) for line in _lines(energy) for x in line.get_xdata()}
    assert drawn == {8192, 16384}  # the 4096 window was too short to trust
    assert energy.get_ylabel() == "J per product, above idle"
    assert trace.get_ylabel() == "power (W)" and _legend(fig, trace) == {"cublas_n4096", "tiled_n4096"}
    assert fig.texts[0].get_text() == "SGEMM FP32 on h100"


def test_sgemm_without_energy_or_power_says_so() -> None:
    fig = sgemm_plot.plot(_sgemm_table(energy=False), _traces(power=False))
    (blank,) = [ax for ax in fig.axes if not ax.axison]
    assert "energy per product: not reported by this device" in _said(blank)
    assert _panel(fig, "telemetry").get_ylabel() == "utilisation (%)"


def _reps() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        {
            "profile": "v100", "device": str(gpu), "gpu_uuid": f"GPU-{gpu}", "backend": backend, "n": 25536,
            "run": run, "rep": rep, "ms": 2300.0 + 10 * gpu, "tflops": (14 - gpu) * rng.normal(1, 0.001),
            "power_w_median": 250.0 + gpu, "sm_clock_mhz_median": 1380.0, "temperature_c_median": np.nan,
            "throttled": rep == 0 and gpu == 1, "energy_per_rep_j": 600.0 + gpu,
            "clock_event_names": "sw_power_cap" if rep == 0 and gpu == 1 else "",
        }
        for backend in ("cublas", "tiled") for gpu in range(3) for run in (1, 2) for rep in range(5)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_variability_per_gpu_medians_every_rep_and_the_few_throttled_reps_ringed() -> None:
    fig = variability_plot.plot(_reps())
    relative = _panel(fig, "per-GPU performance")
    assert relative.get_ylabel() == "rate / median GPU's median rate"
    assert [t.get_text() for t in relative.get_xticklabels()] == ["0", "1", "2"]
    medians = [float(y) for line in _points(relative) for y in line.get_ydata()]  # cublas, tiled
    assert medians == pytest.approx([13 / 12, 1.0, 11 / 12] * 2, rel=1e-2)
    assert _legend(fig, relative) == {"cublas", "tiled"}
    every_rep = _panel(fig, "every rep of every run")
    assert len(_lines(every_rep)) == 3 * 2 * 2  # a line per GPU, backend and run
    assert _panel(fig, "energy per rep").get_ylabel() == "J per SGEMM (NVML energy counter)"
    power = next(ax for ax in fig.axes if ax.get_xlabel() == "power (W)")
    rings = [c for c in power.collections if len(c.get_facecolors()) == 0]
    assert len(rings) == 1 and len(rings[0].get_offsets()) == 4  # rep 0 of GPU 1: two backends, two runs
    assert "throttled rep" in _legend(fig, power)
    said = " ".join(_notes(fig).split())
    assert said == (
        "throttled: 4 of 60 reps on 1 of 3 GPU(s), by the power cap (sw_power_cap) in 4 reps, at a median "
        "251 W; ringed in the scatter panels"
    )
    (no_temperature,) = [ax for ax in fig.axes if "temperature" in _said(ax)]
    assert "not reported by this device" in _said(no_temperature)
    assert fig.texts[0].get_text() == "SGEMM variability on v100, N=25536 (3 device(s))"


def _capped_reps() -> pd.DataFrame:
    """An H100 node's quick variability run: four GPUs, cuBLAS and the tiled kernel, ten reps each, every
    rep at the 700 W cap (NVML's sw_power_cap), GPU 2 also slowed by heat in its last three."""
    rng = np.random.default_rng(1)
    rows = [
        {
            "profile": "h100", "device": str(gpu), "gpu_uuid": f"GPU-{gpu}", "backend": backend, "n": 25536,
            "run": 1, "rep": rep, "ms": 700.0 * scale + gpu, "tflops": 47.5 / scale * rng.normal(1, 0.002),
            "power_w_median": 699.0 + rng.normal(0, 0.5), "sm_clock_mhz_median": 1755.0 - 10 * gpu,
            "temperature_c_median": 60.0 + gpu + rep / 2, "throttled": True, "energy_per_rep_j": 490.0 + gpu,
            "clock_event_names": "sw_power_cap" + ("|sw_thermal_slowdown" if gpu == 2 and rep >= 7 else ""),
        }
        for backend, scale in (("cublas", 1.0), ("tiled", 1.25)) for gpu in range(4) for rep in range(10)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_variability_says_once_in_words_that_every_rep_sat_at_the_power_cap_and_rings_none() -> None:
    fig = variability_plot.plot(_capped_reps())
    power = next(ax for ax in fig.axes if ax.get_xlabel() == "power (W)")
    assert not [c for c in power.collections if len(c.get_facecolors()) == 0]  # no rings
    assert "throttled rep" not in _legend(fig, power)
    said = " ".join(_notes(fig).split())
    assert said.startswith(
        "throttled: every rep on 4 of 4 GPU(s), by the power cap (sw_power_cap) in 80 reps, "
    )
    assert "thermal slowdown (sw_thermal_slowdown) in 6 reps" in said and "at a median 699 W" in said
    assert said.endswith("not ringed, being most of the reps")


def test_variability_without_throttling_has_no_note() -> None:
    fig = variability_plot.plot(_reps().assign(throttled=False, clock_event_names=""))
    assert not [t for t in fig.texts if t.get_fontsize() == NOTE_PT]


def _inference_table(energy: bool = True) -> pd.DataFrame:
    rows = []
    for model, base in (("deit-b", 4.0), ("deit-t", 1.0)):  # out of MODEL_ORDER on purpose
        for mode, speed in (("eager", 1.0), ("cudagraph", 0.4)):
            for precision in ("fp32", "fp16"):
                for batch in (1, 8):
                    keys = {
                        "profile": "h100", "family": "deit", "model": model, "seq_len": np.nan,
                        "batch_size": batch, "precision": precision, "mode": mode, "run": 1, "status": "ok",
                        "reason": "", "source_file": f"{model}_{mode}_{precision}_b{batch}.csv",
                    }  # fmt: skip
                    rows += _quartiles("latency", base * speed * batch, "ms", **keys)
                    joules = 0.3 * base * batch if energy else np.nan
                    rows.append(_row("energy_per_inference", "above_idle", joules / 2, "J", **keys))
                    rows.append(_row("energy_per_inference", "gross", joules, "J", **keys))
    failed = {**keys, "model": "deit-b", "batch_size": 32, "status": "failed", "reason": f"cudagraph: {OOM}"}
    rows.append(_row("latency", "median", np.nan, "ms", **{**failed, "source_file": "b32.csv"}))
    return pd.DataFrame(rows)


# The inference figure's panels, intervals and published marks: tests/test_inference_plot.py.


def test_inference_with_every_point_failed_lists_them() -> None:
    table = _inference_table()
    table = table.assign(status="failed", reason=OOM)
    fig = inference_plot.plot(table, "deit")
    assert "no point ran" in _said(fig.axes[0]) and OOM[:40] in _notes(fig).replace("\n", " ")
    with pytest.raises(ValueError, match="no bert rows"):
        inference_plot.plot(table, "bert")


def _hfta_table() -> pd.DataFrame:
    rows = []
    modes = (("serial", "stock", 0.0), ("concurrent", "stock", 0.5), ("hfta", "stock", 1.0),
             ("hfta", "graphed", 2.0))  # fmt: skip
    for workload in ("mlp", "resnet18"):
        for mode, step, gain in modes:
            for b in (1, 2, 4):
                for run, noise in ((1, 0.9), (2, 1.0), (3, 1.2)):
                    keys = {
                        "profile": "a100", "gpu_name": "NVIDIA A100-SXM4-80GB", "workload": workload,
                        "mode": mode, "step": step, "precision": "fp32", "b": b, "run": run,
                        "batch_size": 128, "image_size": 64, "seq_len": 128, "status": "ok", "reason": "",
                    }  # fmt: skip
                    if workload == "mlp":
                        keys.update(status="failed", reason="worker exited with code 1: diverged")
                    elif mode == "hfta" and b == 4:
                        keys.update(status="oom", reason=OOM)
                    value = (1 + gain * (b - 1)) * noise if keys["status"] == "ok" else np.nan
                    rows.append(_row("throughput", "value", value * 1000, "samples/s", **keys))
                    rows.append(_row("normalised_throughput", "over_serial_fp32", value, "x", **keys))
    return pd.DataFrame(rows)


def test_hfta_one_panel_per_workload_intervals_across_processes_and_wrapped_failures() -> None:
    fig = hfta_plot.plot(_hfta_table())
    resnet = _panel(fig, "resnet18, batch 128 per model, fp32")
    mlp = _panel(fig, "mlp, batch 128 per model, fp32")
    assert fig.axes.index(resnet) < fig.axes.index(mlp)  # workloads in the study's order
    assert "no point ran" in _said(mlp)
    assert resnet.get_ylabel() == "throughput / stock serial fp32 at the same B"
    assert resnet.get_xlabel() == "B (models trained)"
    fused = [line for line in _lines(resnet) if list(line.get_xdata()) == [1, 2]]
    assert sorted(list(line.get_ydata()) for line in fused) == [[1.0, 2.0], [1.0, 3.0]]  # medians, each step
    graphed = next(line for line in fused if list(line.get_ydata()) == [1.0, 3.0])
    assert graphed.get_linestyle() != "-"  # the graphed step dashed, stock solid
    # each point's bars: the 95% interval across its three processes (0.9, 1.0, 1.2 times the median)
    interval = across_processes([1.8, 2.0, 2.4])  # the stock fused array at B=2
    assert (interval.low, interval.high) in [pytest.approx(span) for span in _bar_spans(resnet)]
    assert {"serial", "concurrent", "hfta", "stock step", "graphed step"} <= _legend(fig)
    notes = _notes(fig)
    assert notes.count("\n") >= 3  # long notes wrap onto more lines instead of running off the figure
    flat = notes.replace("\n    ", " ")
    assert "oom (CUDA out of memory." in flat and "resnet18 hfta stock fp32 B=4 run 3" in flat
    assert f"and {36 - MAX_POINTS} more" in flat  # 36 mlp points failed for one reason, said once


def _ddp_table(failed: bool) -> pd.DataFrame:
    keys = {"profile": "h100", "model": "resnet50", "precision": "fp16", "batch_per_gpu": 256,
            "data": "synthetic-224px", "status": "ok", "reason": ""}  # fmt: skip
    rows = []
    for gpus, rate in ((1, 2500.0), (2, 4700.0), (4, 9000.0)):
        point = {**keys, "gpus": gpus, "source_file": f"{gpus}.csv"}
        rows.append(_row("throughput", "total", rate, "images/s", **point))
        rows.append(_row("scaling_efficiency", "value", rate / 2500 / gpus * 100, "%", **point))
    if failed:
        point = {**keys, "gpus": 8, "source_file": "8.csv", "status": "failed", "reason": "rank 5: NCCL"}
        rows.append(_row("throughput", "total", np.nan, "images/s", **point))
    return pd.DataFrame(rows)


def test_ddp_throughput_and_efficiency_beside_their_ideal() -> None:
    fig = ddp_plot.plot(_ddp_table(failed=True))
    throughput, efficiency = _panel(fig, "throughput"), _panel(fig, "scaling efficiency")
    assert throughput.get_ylabel() == "images/s (all GPUs, warm-up excluded)"
    assert throughput.get_xlabel() == "GPUs" and efficiency.get_ylabel() == "% of k x the 1-GPU rate"
    ideal = [list(line.get_ydata()) for line in throughput.lines]
    assert [2500.0, 5000.0, 10000.0] in ideal and [2500.0, 4700.0, 9000.0] in ideal
    assert [t.get_text() for t in efficiency.texts] == ["100%", "94%", "90%"]
    assert {"measured", "ideal"} <= _legend(fig)
    assert "failed (rank 5: NCCL): 8 GPUs" in _notes(fig)


def test_ddp_without_a_one_gpu_run_has_no_efficiency() -> None:
    table = _ddp_table(failed=False)
    fig = ddp_plot.plot(table[(table["gpus"] != 1) & (table["metric"] == "throughput")])
    assert "no 1-GPU run" in _said(_panel(fig, "scaling efficiency"))


def test_runtimes_bars_per_job_and_per_step() -> None:
    jobs = [("sgemm", "torch_n4096", "value", 3.0), ("sgemm", "plot", "value", 2.0),
            ("build", "build", "value", 9.0), ("sgemm", "all jobs", "sum", 5.0),
            ("build", "all jobs", "sum", 9.0)]  # fmt: skip
    fig = runtimes.plot(pd.DataFrame([_row("wall_time", stat, s, "s", step=step, job=job, profile="h100")
                                      for step, job, stat, s in jobs]))  # fmt: skip
    jobs = _panel(fig, "per job (Snakemake benchmark files)")
    assert [t.get_text() for t in jobs.get_yticklabels()] == ["build", "sgemm/plot", "sgemm/torch_n4096"]
    assert sorted(p.get_width() for p in _panel(fig, "per step").patches) == [5.0, 9.0]
    assert fig.texts[0].get_text() == "Runtime of each job on h100 (14 s of jobs in all)"


def test_cli_saves_the_figure(tmp_path: Path) -> None:
    table, png = tmp_path / "hfta.csv", tmp_path / "plots" / "hfta.png"
    _hfta_table().to_csv(table, index=False)
    assert cli.main(["plot", "hfta", str(table), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
