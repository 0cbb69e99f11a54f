"""Every figure draws what its claims were judged by: rendered from the shipped reference runs' tables,
each claim the verdict read against a range has, at the point it read, a box spanning the range the
verdict accepted and a bar spanning the interval it judged the value by, both compared with the
verdict's own outcome on the same tables; a reading the verdict leaves host-dependent is hatched and
says so; a judged claim no panel shows is given in the figure's note."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from gpurepro.commands.plot import PLOTTERS
from gpurepro.compare.pack import unpack
from gpurepro.hardware import load_hardware
from gpurepro.hfta_study import plot as hfta_plot
from gpurepro.plotting import HOST_HATCH, HOST_WORDS, NOTE_PT
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims
from gpurepro.verdict.outcome import Outcome

from .conftest import ROOT

REFERENCE = ROOT / "reference-runs"
# The inference claims' paper GPU, by its NVML name: off it the verdict reads the A100's figures as
# informational or host-bound (nothing judged against a range), so the shipped H200 run's inference
# tables are set on it here to be judged as the verdict judges a run on that GPU.
A100 = "NVIDIA A100-SXM4-80GB"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def h200(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped H200 quick run's tables folder."""
    return unpack(REFERENCE / "h200-quick-2026-11-28.tar.gz", tmp_path_factory.mktemp("h200")) / "tables"


@pytest.fixture(scope="module")
def four_h200(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped four-H200 quick run's tables folder (the variability study on four GPUs)."""
    archive = REFERENCE / "h200x4-pair-one-quick-2026-11-28.tar.gz"
    return unpack(archive, tmp_path_factory.mktemp("x4")) / "tables"


def _verdict(tables: dict[str, pd.DataFrame]) -> dict[str, Outcome]:
    """Every shipped claim as the verdict judges it on these tables, by id."""
    hardware = load_hardware()
    claims = load_claims([ROOT / "config" / "expected"], hardware=hardware)
    return {outcome.claim.id: outcome for outcome in evaluate(claims, tables, hardware)}


def _boxes(ax: Axes) -> list[tuple[float, float, float, float, str | None]]:
    """Every box drawn by fill_between: (x0, x1, low, high, hatch)."""
    return [
        (*map(float, (xs.min(), xs.max(), ys.min(), ys.max())), collection.get_hatch())
        for collection in ax.collections
        if isinstance(collection, PolyCollection)
        for xs, ys in (path.vertices.T for path in collection.get_paths())
    ]


def _bars(ax: Axes) -> list[tuple[float, float, float]]:
    """Every vertical error bar: (x, low, high)."""
    return [
        (float(seg[0][0]), float(seg[:, 1].min()), float(seg[:, 1].max()))
        for collection in ax.collections
        if isinstance(collection, LineCollection)
        for seg in map(np.asarray, collection.get_segments())
        if len(seg) == 2 and seg[0][0] == seg[1][0]
    ]


def _box_at(ax: Axes, accepted: tuple[float, float]) -> tuple[float, float, float, float, str | None]:
    """The one box spanning the accepted range."""
    (box,) = [b for b in _boxes(ax) if b[2:4] == pytest.approx(accepted, rel=1e-9)]
    return box


def _middle(ax: Axes, x0: float, x1: float) -> float:
    """A box's middle as drawn: the geometric one on a log axis."""
    return math.sqrt(x0 * x1) if ax.get_xscale() == "log" else (x0 + x1) / 2


def _panel(fig: Figure, title: str) -> Axes:
    (ax,) = [ax for ax in fig.axes if ax.get_title() == title]
    return ax


def _notes(fig: Figure) -> str:
    """The notes under the figure without their whitespace: wrapping breaks lines at spaces and hyphens."""
    return "".join("".join(t.get_text() for t in fig.texts if t.get_fontsize() == NOTE_PT).split())


def _said(words: str) -> str:
    """Words as _notes() holds them."""
    return "".join(words.split())


def _on_a100(tables: Path, family: str) -> tuple[Path, dict[str, pd.DataFrame]]:
    """The family's tables of the shipped run set on the A100, written to a folder of their own."""
    folder = tables.parent / f"a100-{family}"
    folder.mkdir(exist_ok=True)
    judged = {}
    for name in (f"inference_{family}", f"inference_{family}_processes"):
        judged[name] = pd.read_csv(tables / f"{name}.csv").assign(gpu_name=A100)
        judged[name].to_csv(folder / f"{name}.csv", index=False)
    return folder / f"inference_{family}.csv", judged


def test_deit_draws_the_a100_latency_as_judged_and_the_difference_in_words(h200: Path) -> None:
    """On the paper's GPU the eager DeiT-B latency is judged against 3.8-5.03 ms (4.37 ms +-15%): its
    box behind the point it read, its bar the verdict's (it judged the value alone: none); the energy
    difference DeiT-B minus DeiT-T, read over the across-process table the command finds beside the
    table, has no panel and is given in words, host-dependent as the verdict reads it."""
    path, tables = _on_a100(h200, "deit")
    verdict = _verdict(tables)
    fig = PLOTTERS["deit"](tables["inference_deit"], argparse.Namespace(table=str(path)))
    latency = _panel(fig, "latency\nfp16, batch 1")
    judged = verdict["deit-b-a100-latency-bs1-amp"]
    x0, x1, *_ = _box_at(latency, judged.shown_range)
    (point,) = [
        (x, y)
        for line in latency.get_lines()
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
        if line.get_marker() == "o" and y == pytest.approx(judged.values[0])
    ]
    assert x0 < point[0] < x1  # the box stands behind the eager DeiT-B point the claim read
    assert judged.intervals == ()  # judged by the value alone: the point has no bar
    assert not [bar for bar in _bars(latency) if x0 < bar[0] < x1 and bar[2] > bar[1]]
    notes = _notes(fig)
    read = f"deit-b-a100-latency-bs1-amp {judged.values[0]:.4g}, accepted 3.8 to 5.026: {judged.status}"
    assert _said(read) in notes
    difference = verdict["deit-b-minus-deit-t-power"]
    assert "host-dependent" in difference.status
    low, high = difference.intervals[0]
    read = f"deit-b-minus-deit-t-power {difference.values[0]:.4g} judged by [{low:.4g}, {high:.4g}]"
    assert notes.index(_said("on no panel:")) < notes.index(_said(read))
    assert _said(f"accepted {difference.shown_range[0]:.4g} to {difference.shown_range[1]:.4g}") in notes


def test_bert_power_of_another_basis_is_judged_in_words_not_drawn(h200: Path) -> None:
    """BERT's published watts are above an idle with no CUDA context: judged on the A100, they are
    given in the note with their ranges, and no box stands on the panel of power above active idle."""
    path, tables = _on_a100(h200, "bert")
    verdict = _verdict(tables)
    fig = PLOTTERS["bert"](tables["inference_bert"], argparse.Namespace(table=str(path)))
    assert not _boxes(_panel(fig, "power above active idle\nfp16, batch 1"))
    notes = _notes(fig)
    for claim in ("bert-b-s128-a100-power-above-idle", "bert-l-s320-a100-power-above-idle"):
        low, high = verdict[claim].shown_range
        assert _said(f"{claim} {verdict[claim].values[0]:.4g}, accepted {low:.4g} to {high:.4g}") in notes


def test_sgemm_draws_each_judged_rate_with_its_range_and_interval(h200: Path) -> None:
    """The shipped H200 run's SGEMM rates judged by this project's own H200 figures: each judged rate has
    its accepted range as a box in its backend's slot at its N and the verdict's interval as a bar in
    the box's middle; the tiled-over-cuBLAS ratios, which no panel shows, are in the note."""
    table = pd.read_csv(h200 / "sgemm.csv")
    verdict = _verdict({"sgemm": table})
    fig = PLOTTERS["sgemm"](table, argparse.Namespace(traces=[]))  # as `gpurepro plot sgemm` draws it
    rate = _panel(fig, "rate")
    drawn = [o for o in verdict.values() if o.claim.plot == "sgemm" and o.claim.measure.metric == "rate"]
    drawn = [o for o in drawn if o.intervals and not o.claim.divide_by]
    assert len(drawn) == 4  # cuBLAS and tiled at 8192 and 25536
    for outcome in drawn:
        x0, x1, *_ = _box_at(rate, outcome.shown_range)
        n = outcome.claim.measure.where["n"]
        assert x0 <= n <= x1 and x1 / x0 < 1.2  # beside its own N, not another's
        assert (pytest.approx(_middle(rate, x0, x1)), *map(pytest.approx, outcome.intervals[0])) in _bars(
            rate
        )
    ratio = verdict["h200-tiled-vs-cublas-n8192"]
    assert _said(f"on no panel: h200-tiled-vs-cublas-n8192 {ratio.values[0]:.4g} judged by [") in _notes(fig)


def test_variability_draws_a_judged_spread_on_its_panel(four_h200: Path) -> None:
    """The project's H200 spreads are claimed at N=16384, which the quick plan does not sweep: the
    shipped four-GPU run's spreads (measured at 25536) are set at 16384 to be judged by them. The tiled
    power spread, read against 0-9.1%, has its box behind its point and the verdict's interval as its
    bar; the time spreads, whose range cannot fail (direction alone), have no box."""
    folder = four_h200.parent / "at-16384"
    folder.mkdir(exist_ok=True)
    tables = {}
    for name in ("variability_reps", "variability_summary"):
        tables[name] = pd.read_csv(four_h200 / f"{name}.csv").assign(n=16384)
        tables[name].to_csv(folder / f"{name}.csv", index=False)
    verdict = _verdict(tables)
    # as `gpurepro plot variability` draws it: the summary read beside the reps
    fig = PLOTTERS["variability"](
        tables["variability_reps"], argparse.Namespace(table=str(folder / "variability_reps.csv"))
    )
    spread = _panel(fig, "spread across GPUs")
    judged = verdict["h200-tiled-power-spread-n16384"]
    x0, x1, *_ = _box_at(spread, judged.shown_range)
    (bar,) = [b for b in _bars(spread) if x0 < b[0] < x1]
    assert bar[1:] == pytest.approx(judged.intervals[0])
    assert len(_boxes(spread)) == 1
    assert verdict["h200-cublas-time-spread-n16384"].result.endswith("magnitude not testable here")
    assert _said(f"h200-tiled-power-spread-n16384 {judged.values[0]:.4g} judged by") in _notes(fig)


def test_hfta_marks_the_speedup_over_serial_host_dependent(h200: Path) -> None:
    """HFTA over eager serial training on the shipped H200 run: the verdict reads its magnitude
    host-dependent (the serial baseline is host-paced); the figure hatches its box and says so beside it,
    while the speedup over MPS (GPU-bound both sides) is a plain box."""
    table = pd.read_csv(h200 / "hfta.csv")
    summary = pd.read_csv(h200 / "hfta_speedup.csv")
    verdict = _verdict({"hfta": table, "hfta_speedup": summary})
    fig = hfta_plot.plot(table, summary)
    speedups = _panel(fig, "fused array's speedup over each baseline\nfp16, stock steps")
    serial, mps = verdict["hfta-speedup-over-serial"], verdict["hfta-speedup-over-mps"]
    assert "host-dependent" in serial.status and "host-dependent" not in mps.status
    x0, x1, low, high, hatch = _box_at(speedups, serial.shown_range)
    assert hatch == HOST_HATCH and _box_at(speedups, mps.shown_range)[4] is None
    (said,) = [t for t in speedups.texts if t.get_text() == HOST_WORDS]
    assert x0 < said.xy[0] < x1 and said.xy[1] == pytest.approx(high)
    assert (pytest.approx((x0 + x1) / 2), *map(pytest.approx, serial.intervals[0])) in _bars(speedups)
    assert any("host-dependent" in text.get_text() for text in fig.legends[0].get_texts())
    assert not math.isclose(low, high)


def test_hfta_draws_the_projects_own_fused_throughput_at_its_b(h200: Path) -> None:
    """This project's own fused ResNet-18 throughput at B=32 (scaled from the H100 by the run's reference
    rates, read over the across-process table): on the quick run's raw samples/s panel its box spans the
    range the verdict accepted at B=32 and its black bar the interval the verdict judged it by; the
    speedup at the fused array's best B, which no panel shows, is in the note."""
    names = ("hfta", "hfta_speedup", "hfta_processes", "reference")
    tables = {name: pd.read_csv(h200 / f"{name}.csv") for name in names}
    verdict = _verdict(tables)
    args = argparse.Namespace(table=str(h200 / "hfta.csv"), reference=str(h200 / "reference.csv"))
    fig = PLOTTERS["hfta"](tables["hfta"], args)
    curve = _panel(fig, "resnet18, batch 128 per model, fp16")
    throughput = verdict["h100-hfta-fused-b32-throughput"]
    x0, x1, *_ = _box_at(curve, throughput.shown_range)
    assert x0 < 32 < x1 < 64
    assert curve.get_xscale() == "log" and _middle(curve, x0, x1) == pytest.approx(32)
    bar = (pytest.approx(32), *map(pytest.approx, throughput.intervals[0]))
    assert bar in _bars(curve)
    at_best = verdict["h100-hfta-fused-over-mps-b32"]
    assert _said(f"on no panel: h100-hfta-fused-over-mps-b32 {at_best.values[0]:.4g} judged by") in _notes(
        fig
    )


def test_ddp_draws_the_projects_own_1gpu_rate_as_judged(h200: Path) -> None:
    """This project's own ResNet-50 images/s on one H200: a box behind the measured 1-GPU point spans
    the range the verdict accepted, and the point's bars are the interval it judged the value by;
    NVIDIA's AMP over TF32, a ratio no panel shows, is in the note with its interval and range."""
    tables = {name: pd.read_csv(h200 / f"{name}.csv") for name in ("ddp", "reference")}
    verdict = _verdict(tables)
    args = argparse.Namespace(table=str(h200 / "ddp.csv"), reference=str(h200 / "reference.csv"))
    fig = PLOTTERS["ddp"](tables["ddp"], args)
    throughput = _panel(fig, "throughput")
    own = verdict["h200-resnet50-1gpu"]
    x0, x1, *_ = _box_at(throughput, own.shown_range)
    assert x0 < 1 < x1 and _middle(throughput, x0, x1) == pytest.approx(1)
    assert (pytest.approx(1), *map(pytest.approx, own.intervals[0])) in _bars(throughput)
    ratio = verdict["nvidia-resnet50-a100-amp-over-tf32"]
    low, high = ratio.intervals[0]
    read = f"nvidia-resnet50-a100-amp-over-tf32 {ratio.values[0]:.4g} judged by [{low:.4g}, {high:.4g}]"
    assert _said(f"on no panel: {read}") in _notes(fig)
