"""ddp.png agrees with the verdict (issue 48): every measured point has bars and says what they are, and
NVIDIA's published figures are drawn at the GPU counts they name, scaled to this GPU by the verdict's own
factor (datasheet against datasheet for an A100 or V100 figure on an H100), or named with the verdict's
reason where it cannot read them here."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gpurepro import cli
from gpurepro.hardware import load_hardware
from gpurepro.plotting import NOTE_PT
from gpurepro.process_stats import across_processes
from gpurepro.profiles import project_root
from gpurepro.training import plot as ddp_plot
from gpurepro.verdict.evaluate import evaluate
from gpurepro.verdict.loading import load_claims

H100 = "NVIDIA H100 80GB HBM3"
# images/s of all GPUs and the step time's quartiles (ms), as a quick run on four H100s measures them
FP16 = {1: 4_591.0, 2: 8_900.0, 4: 17_300.0}
TF32 = 2_516.0


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _point(precision: str, gpus: int, rate: float, run: int | None = None) -> list[dict]:
    keys = {
        "study": "ddp", "gpu_name": H100, "profile": "h100", "model": "resnet50", "data": "synthetic-224px",
        "image_size": 224, "num_classes": 1000, "precision": precision, "channels_last": True,
        "batch_per_gpu": 256, "gpus": gpus, "devices": ",".join(map(str, range(gpus))), "status": "ok",
        "reason": "", "source_file": f"{precision}_{gpus}gpu_run{run}.csv",
    }  # fmt: skip
    if run is not None:
        keys["run"] = run
    step = 256 * gpus / rate * 1000  # ms per step
    figures = [
        ("throughput", "total", rate, "images/s"),
        ("throughput", "per_gpu", rate / gpus, "images/s"),
        ("speedup_vs_1_gpu", "value", rate / FP16[1], "x"),
        ("scaling_efficiency", "value", rate / FP16[1] / gpus * 100, "%"),
        ("step_time", "median", step, "ms"),
        ("step_time", "p25", step * 0.98, "ms"),
        ("step_time", "p75", step * 1.04, "ms"),
    ]
    return [{**keys, "metric": m, "statistic": s, "value": v, "unit": u} for m, s, v, u in figures]


def h100_table() -> pd.DataFrame:
    rows = [row for gpus, rate in FP16.items() for row in _point("fp16", gpus, rate)]
    return pd.DataFrame(rows + _point("tf32", 1, TF32))


def _panel(fig: Figure, title: str) -> Axes:
    (ax,) = [ax for ax in fig.axes if ax.get_title() == title]
    return ax


def _marks(ax: Axes) -> dict[str, list[tuple[float, float]]]:
    """Black markers drawn: marker -> [(x, y)]."""
    return {
        str(line.get_marker()): list(zip(line.get_xdata(), line.get_ydata(), strict=True))
        for line in ax.get_lines()
        if line.get_color() == "black"
        and len(line.get_xdata())
        and line.get_marker() not in ("", "None", "_")
    }


def _bars(ax: Axes) -> list[tuple[float, float]]:
    return [
        (float(seg[:, 1].min()), float(seg[:, 1].max()))
        for collection in ax.collections
        for seg in map(np.asarray, getattr(collection, "get_segments", list)())
        if len(seg) == 2 and seg[0][0] == seg[1][0]
    ]


def _notes(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.texts if t.get_fontsize() == NOTE_PT).replace("\n    ", " ")


def _verdict(table: pd.DataFrame) -> dict:
    path = project_root() / "config" / "expected" / "resnet50_training.yaml"
    hardware = load_hardware()
    outcomes = evaluate(load_claims([path], hardware=hardware), {"ddp": table}, hardware, 4)
    return {outcome.claim.id: outcome for outcome in outcomes}


def test_published_images_per_second_are_scaled_by_the_verdicts_factor() -> None:
    table = h100_table()
    fig = ddp_plot.plot(table)
    throughput = _panel(fig, "throughput")
    outcome = _verdict(table)["nvidia-resnet50-a100-80gb-amp-1gpu"]
    assert outcome.factor is not None and outcome.factor != pytest.approx(1.0)
    # one mark: the V100 figure, two generations from an H100, reads through the A100's (the verdict's own
    # reading), so it is not drawn as a second figure; the 8-GPU ones need 8 GPUs
    (a100,) = (marks for _, marks in sorted(_marks(throughput).items()))
    ((x, y),) = a100
    assert round(x) == 1 and y == pytest.approx(2_470 * outcome.factor)
    assert (outcome.accepted[0], y) in [pytest.approx(bar) for bar in _bars(throughput)]  # down to accepted
    assert (
        "published, not drawn: V100 SXM2 at 1 GPU (read through A100 80GB's figure of the same table)"
        in _notes(fig)
    )
    legend = {t.get_text().replace("\n", " ") for legend in fig.legends for t in legend.get_texts()}
    assert (
        f"A100 80GB published (images/s x {outcome.factor:.3g} to this GPU), bar to the lowest the verdict "
        "accepts" in legend
    )
    assert "published, not drawn: A100 80GB at 8 GPUs, V100 SXM2 at 8 GPUs (needs 8 GPUs; 4 here)" in _notes(
        fig
    )


def test_every_measured_point_has_bars_and_the_figure_says_they_are_within_one_process() -> None:
    fig = ddp_plot.plot(h100_table())
    throughput = _panel(fig, "throughput")
    rate, step = FP16[2], 256 * 2 / FP16[2] * 1000
    assert (rate * step / (step * 1.04), rate * step / (step * 0.98)) in [
        pytest.approx(bar) for bar in _bars(throughput)
    ]
    assert len(_bars(_panel(fig, "scaling efficiency"))) == 2  # 2 and 4 GPUs; 1 GPU is 100% by definition
    assert ddp_plot.WITHIN in _notes(fig)


def test_several_processes_give_the_interval_across_them() -> None:
    rows = [row for run, f in ((1, 0.97), (2, 1.0), (3, 1.04)) for row in _point("fp16", 1, 4_591 * f, run)]
    rows += [row for run, f in ((1, 0.98), (2, 1.0), (3, 1.01)) for row in _point("fp16", 2, 8_900 * f, run)]
    fig = ddp_plot.plot(pd.DataFrame(rows))
    interval = across_processes([4_591 * 0.97, 4_591, 4_591 * 1.04])
    assert (interval.low, interval.high) in [pytest.approx(bar) for bar in _bars(_panel(fig, "throughput"))]
    assert ddp_plot.ACROSS in _notes(fig) and ddp_plot.WITHIN not in _notes(fig)


def test_on_the_cpu_nothing_published_is_drawn_and_the_note_says_why() -> None:
    table = h100_table().assign(gpu_name="cpu", profile="cpu")
    fig = ddp_plot.plot(table)
    assert not _marks(_panel(fig, "throughput"))
    assert "published, not drawn" in _notes(fig) and "no GPU in this run" in _notes(fig)


def test_the_cli_draws_it(tmp_path: Path) -> None:
    table, png = tmp_path / "ddp.csv", tmp_path / "ddp.png"
    h100_table().to_csv(table, index=False)
    assert cli.main(["plot", "ddp", str(table), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_point_a_claim_reads_has_the_bars_the_verdict_judged_it_by() -> None:
    """NVIDIA's 1-GPU images/s reads the 1-GPU AMP point of one process: its bars are the interval the
    verdict judged it by (at least the spread between machines it spans), not its timed intervals' IQR,
    and the note says so."""
    table = h100_table()
    fig = ddp_plot.plot(table)
    judged = _verdict(table)["nvidia-resnet50-a100-80gb-amp-1gpu"]
    bars = [pytest.approx(bar) for bar in _bars(_panel(fig, "throughput"))]
    assert judged.intervals and judged.intervals[0] in bars
    rate, step = FP16[1], 256 / FP16[1] * 1000
    assert (rate * step / (step * 1.04), rate * step / (step * 0.98)) not in bars  # its own IQR: not drawn
    assert ddp_plot.JUDGED in _notes(fig).replace("\n", " ")
