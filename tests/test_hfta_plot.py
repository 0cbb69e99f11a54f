"""The HFTA figure agrees with the verdict (issue 48): it shows the fused array's speedups over serial and
MPS with their intervals across processes against the paper's range, in quick runs too, where each mode
is one point; its legend draws a line only for a mode that has one."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from gpurepro import cli
from gpurepro.hfta_study import plot as hfta_plot
from gpurepro.hfta_study import summary
from gpurepro.plotting import NOTE_PT
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.published import study_claims

H100 = "NVIDIA H100 80GB HBM3"
# samples/s per process, as an H100 measures ResNet-18 at batch 128 in AMP: serial one model at a time
# (host-paced: three processes), MPS and the fused array at B=32 (GPU-bound: two).
QUICK = {
    ("serial", 1): [10_500.0, 11_200.0, 11_800.0],
    ("mps", 32): [61_000.0, 63_500.0],
    ("hfta", 32): [131_000.0, 133_500.0],
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _rows(workload: str, mode: str, precision: str, b: int, rates: list[float], step: str = "stock") -> list:
    keys = {
        "study": "hfta", "profile": "h100", "gpu_name": H100, "workload": workload, "mode": mode,
        "step": step, "precision": precision, "b": b, "batch_size": 128, "image_size": 64, "seq_len": 128,
        "status": "ok", "reason": "", "metric": "throughput", "statistic": "value", "unit": "samples/s",
    }  # fmt: skip
    return [{**keys, "run": run, "value": rate} for run, rate in enumerate(rates, start=1)]


def _table(rows: list[dict]) -> pd.DataFrame:
    """The tidy table as `gpurepro aggregate hfta` writes it: throughput rows and their normalisation."""
    table = pd.DataFrame(rows)
    return pd.concat([table, summary.normalise(table)], ignore_index=True)


def quick_h100_table() -> pd.DataFrame:
    rows = []
    for (mode, b), rates in QUICK.items():
        rows += _rows("resnet18", mode, "fp16", b, rates)
    return _table(rows)


def full_h100_table() -> pd.DataFrame:
    """Three workloads in fp32 and fp16, serial at B=1, MPS at 8 and 32, the fused array at 1, 8 and 32
    (stock and graphed), five processes each; the transformer's fused B=32 fp32 ran out of memory."""
    rng = np.random.default_rng(0)
    rows = []
    for workload, scale in (("resnet18", 1.0), ("transformer", 0.6), ("mlp", 3.0)):
        for precision, speed in (("fp32", 0.5), ("fp16", 1.0)):
            base = 11_000 * scale * speed
            for mode, step, b, gain in (
                ("serial", "stock", 1, 1.0), ("mps", "stock", 8, 4.0), ("mps", "stock", 32, 5.5),
                ("hfta", "stock", 1, 1.1), ("hfta", "stock", 8, 7.0), ("hfta", "stock", 32, 11.0),
                ("hfta", "graphed", 8, 9.0), ("hfta", "graphed", 32, 12.0),
            ):  # fmt: skip
                rates = list(base * gain * rng.normal(1, 0.04, 5))
                rows += _rows(workload, mode, precision, b, rates, step)
    table = pd.DataFrame(rows)
    oom = (table["workload"] == "transformer") & (table["precision"] == "fp32") & (table["b"] == 32)
    oom &= table["mode"] == "hfta"
    table.loc[oom, ["status", "reason", "value"]] = ["oom", "CUDA out of memory", math.nan]
    return _table(table.to_dict("records"))


def _panel(fig: Figure, title: str) -> Axes:
    (ax,) = [ax for ax in fig.axes if ax.get_title() == title]
    return ax


def _markers(ax: Axes) -> dict[str, tuple[list[float], list[float]]]:
    """Drawn points by marker: (x, y)."""
    return {
        str(line.get_marker()): (list(line.get_xdata()), list(line.get_ydata()))
        for line in ax.get_lines()
        if line.get_marker() not in (None, "None", "", " ", "_") and len(line.get_xdata())
    }


def _bars(ax: Axes) -> list[tuple[float, float]]:
    """(low, high) of every vertical error bar."""
    return [
        (float(seg[:, 1].min()), float(seg[:, 1].max()))
        for collection in ax.collections
        if isinstance(collection, LineCollection)
        for seg in map(np.asarray, collection.get_segments())
        if len(seg) == 2 and seg[0][0] == seg[1][0]
    ]


def _boxes(ax: Axes) -> list[tuple[float, float]]:
    """(low, high) of every paper's-range box."""
    return [
        (float(path.vertices[:, 1].min()), float(path.vertices[:, 1].max()))
        for collection in ax.collections
        if isinstance(collection, PolyCollection)
        for path in collection.get_paths()
    ]


def _held_ends(ax: Axes) -> list[float]:
    """The y of every horizontal segment drawn as a collection (the ranges' held lower ends)."""
    return [
        float(seg[0][1])
        for collection in ax.collections
        if isinstance(collection, LineCollection)
        for seg in map(np.asarray, collection.get_segments())
        if len(seg) == 2 and seg[0][1] == seg[1][1]
    ]


def _notes(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.texts if t.get_fontsize() == NOTE_PT).replace("\n    ", " ")


def test_a_quick_run_shows_the_speedups_with_intervals_against_the_papers_range() -> None:
    table = quick_h100_table()
    fig = hfta_plot.plot(table)
    speedups = _panel(fig, "fused array's speedup over each baseline\nfp16, stock steps")
    assert speedups.get_ylabel() == hfta_plot.SPEEDUP_YLABEL
    serial, mps = _markers(speedups)["o"], _markers(speedups)["D"]  # serial's and MPS's markers
    assert serial[1] == pytest.approx([132_250 / 11_200])  # fused median over serial median
    assert mps[1] == pytest.approx([132_250 / 62_250])
    # each point a claim reads is drawn as the verdict judged it: its bar the interval the verdict read it
    # by (at least the spread between machines it spans), its box the range the verdict accepted
    wanted = summary.speedups(table[table["metric"] == "throughput"])
    claims, hardware = study_claims("hfta")
    judged_here = [o for o in evaluate(claims, {"hfta_speedup": wanted}, hardware) if o.intervals]
    outcomes = {o.claim.id: o for o in judged_here}
    bars, boxes = _bars(speedups), _boxes(speedups)
    for judged in judged_here:
        assert judged.intervals[0] in [pytest.approx(bar) for bar in bars]
        assert judged.shown_range in [pytest.approx(box) for box in boxes]
    # the stated 1.25-4.72x and 2.42-11.50x and the abstract's "up to 15.1x", each end widened by the
    # claims' +-10%
    stated = [(1.25 / 1.1, 4.72 * 1.1), (0.0, 15.1 * 1.1), (2.2, 12.65)]
    assert [pytest.approx(box, rel=1e-3, abs=1e-9) for box in sorted(boxes)] == sorted(stated)
    outcomes["serial"], outcomes["mps"] = (
        outcomes["hfta-speedup-over-serial"],
        outcomes["hfta-speedup-over-mps"],
    )
    over = wanted[(wanted["metric"] == "speedup") & (wanted["baseline"] == "serial")].set_index("statistic")
    low, high = over.loc["max_ci_low", "value"], over.loc["max_ci_high", "value"]
    # the verdict's interval spans the spread between machines: wider than the processes' own
    assert outcomes["serial"].intervals[0][0] < low < serial[1][0] < high < outcomes["serial"].intervals[0][1]
    # each range is stated across the paper's models and GPUs: its lower end with the tolerance, which one
    # workload here is held to, is drawn as a line at the box's foot
    assert sorted(_held_ends(speedups)) == pytest.approx(
        [outcomes["mps"].accepted[0], outcomes["serial"].accepted[0]]
    )
    assert "The verdict on these tables: over serial: direction holds" in _notes(fig)
    assert speedups.get_yscale() == "log"
    assert "speedups with no interval" not in _notes(fig)
    said = {t.get_text() for t in speedups.texts}
    assert {"11.8x (2:3)", "2.12x (2:2)"} <= said  # each with the processes behind its two sides
    assert hfta_plot.COUNTS in _notes(fig)


def test_a_quick_runs_legend_draws_no_line_for_a_mode_of_one_point() -> None:
    fig = hfta_plot.plot(quick_h100_table())
    (legend,) = fig.legends
    handles = {
        text.get_text(): handle
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    assert {"serial", "mps", "hfta"} <= set(handles)
    assert all(handles[mode].get_linestyle() == "None" for mode in ("serial", "mps", "hfta"))
    assert not any("step" in label for label in handles)  # one step: no line style to tell apart
    assert any(
        label.replace("\n", " ").startswith("accepted as judged here: the paper's range") for label in handles
    )
    curves = _panel(fig, "resnet18, batch 128 per model, fp16")
    assert curves.get_ylabel() == "throughput (samples/s)"  # fp16 only: nothing to normalise by
    assert hfta_plot.UNNORMALISED in fig._suptitle.get_text().replace("\n", " ")
    hfta = _markers(curves)["^"]
    assert hfta[1] == pytest.approx([132_250.0])  # the median of its two processes
    assert any(low < 131_000 and high > 133_500 for low, high in _bars(curves))  # across processes


def test_a_side_from_one_process_is_drawn_with_the_interval_the_verdict_gave_it() -> None:
    """The speedup table has no interval for a side from one process; the verdict reads that side with
    the spread between processes it spans, and the figure draws that interval, not none."""
    table = quick_h100_table()
    table = table[~((table["mode"] == "mps") & (table["run"] == 2))]
    fig = hfta_plot.plot(table)
    assert "speedups with no interval" not in _notes(fig)
    claims, hardware = study_claims("hfta")
    wanted = summary.speedups(table[table["metric"] == "throughput"])
    (mps,) = [o for o in evaluate(claims, {"hfta_speedup": wanted}, hardware) if o.claim.id.endswith("mps")]
    speedups = _panel(fig, "fused array's speedup over each baseline\nfp16, stock steps")
    assert mps.processes == (2, 1) and mps.intervals[0] in [pytest.approx(bar) for bar in _bars(speedups)]


def test_a_full_run_has_a_row_per_precision_curves_per_workload_and_steps_in_the_legend() -> None:
    fig = hfta_plot.plot(full_h100_table())
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[:4] == [
        "fused array's speedup over each baseline\nfp32, stock steps",
        "resnet18, batch 128 per model, fp32",
        "transformer, batch 128 per model, fp32",
        "mlp, batch 128 per model, fp32",
    ]
    assert len(fig.axes) == 8
    speedups = fig.axes[4]  # fp16
    assert [t.get_text() for t in speedups.get_xticklabels()] == ["resnet18", "transformer", "mlp"]
    assert len(_markers(speedups)["o"][1]) == 3 and len(_markers(speedups)["D"][1]) == 3  # serial, mps
    # the claims read ResNet-18 in AMP alone (their protocol's workload and precision): three boxes at
    # its points (over serial, over MPS, the abstract's "up to"), none at the other workloads or in FP32
    assert len(_boxes(speedups)) == 3 and not _boxes(fig.axes[0])
    resnet = _panel(fig, "resnet18, batch 128 per model, fp32")
    assert resnet.get_ylabel() == "throughput / stock serial fp32 at the same B"
    assert [t.get_text() for t in resnet.get_xticklabels()] == ["1", "8", "32"]
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert {"stock step", "graphed step"} <= set(labels)
    assert "oom (CUDA out of memory): transformer hfta stock fp32 B=32 run 1" in _notes(fig)


def test_the_cli_draws_it(tmp_path: Path) -> None:
    table, png = tmp_path / "hfta.csv", tmp_path / "hfta.png"
    quick_h100_table().to_csv(table, index=False)
    assert cli.main(["plot", "hfta", str(table), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
