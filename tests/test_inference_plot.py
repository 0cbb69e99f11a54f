"""The inference figures show each claim's comparison in one panel (issue 42): one panel per metric the
claims read (latency, power and energy above active idle), the models side by side on the x axis, the
mode as hue, the median over runs with its interval across them (or, from one run, the power's interval
within it), and the A100's published figures, read from the claims file, as marks beside their points,
each only on a panel of the basis it was measured on (issue 48): the artifact's power and energy above an
idle with no CUDA context are named in a note, never drawn on the panels above active idle."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from gpurepro import cli
from gpurepro.inference import plot as inference_plot
from gpurepro.plotting import NOTE_PT
from gpurepro.process_stats import across_processes

H100 = "NVIDIA H100 80GB HBM3"
LATENCY, POWER, ENERGY = (panel.title for panel in inference_plot.PANELS)
OOM = "CUDA out of memory. Tried to allocate 12.00 GiB"
# Per model and mode at fp16, batch 1: eager latency (ms) and power above active idle (W) per run, as a
# quick H100 run measures them (the host paces eager batch 1; a CUDA graph replay is the GPU's time).
RUNS = {
    ("deit-t", "eager"): ([3.9, 4.6, 5.2], [3.1, 3.4, 3.9]),
    ("deit-s", "eager"): ([4.4, 5.1, 5.9], [8.1, 9.0, 9.6]),
    ("deit-b", "eager"): ([7.9, 8.95, 10.4], [18.0, 19.1, 20.4]),
    ("deit-b", "cudagraph"): ([0.97, 0.99], [160.0, 166.0]),
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _point(family: str, model: str, mode: str, run: int, precision: str = "fp16", batch: int = 1,
           seq_len: float = np.nan) -> dict:  # fmt: skip
    return {
        "study": "inference", "profile": "h100", "device": "0", "gpu_name": H100, "family": family,
        "model": model, "seq_len": seq_len, "batch_size": batch, "precision": precision, "mode": mode,
        "run": run, "status": "ok", "reason": "",
        "source_file": f"{model}_s{seq_len}_b{batch}_{precision}_{mode}_run{run}.csv",
    }  # fmt: skip


def _rows(keys: dict, ms: float, watts: float, half_width: float = 1.5) -> list[dict]:
    """A point's rows as `gpurepro aggregate inference` writes them (the metrics the figure reads)."""
    figures = [
        ("latency", "median", ms, "ms"),
        ("latency", "p25", ms * 0.98, "ms"),
        ("latency", "p75", ms * 1.03, "ms"),
        ("power_above_active_idle", "mean", watts, "W"),
        ("power_above_active_idle", "ci_low", watts - half_width, "W"),
        ("power_above_active_idle", "ci_high", watts + half_width, "W"),
        ("power_above_active_idle", "at_median_pace", watts, "W"),
        ("power_above_idle", "mean", watts + 60, "W"),  # above the idle before any CUDA context: not drawn
        ("energy_per_inference", "above_active_idle", watts * ms / 1000, "J"),
        ("energy_per_inference", "above_idle", (watts + 60) * ms / 1000, "J"),
    ]  # fmt: skip
    return [{**keys, "metric": m, "statistic": s, "value": v, "unit": u} for m, s, v, u in figures]


def quick_deit_table(runs: int | None = None) -> pd.DataFrame:
    """A quick H100 run's DeiT table: DeiT-T/S/B eager and DeiT-B as a CUDA graph, fp16, batch 1, each
    point in several runs (`runs`: only the first so many); one point failed."""
    rows = []
    for (model, mode), (latencies, powers) in RUNS.items():
        for run, (ms, watts) in enumerate(zip(latencies, powers, strict=True), start=1):
            if runs is None or run <= runs:
                rows += _rows(_point("deit", model, mode, run), ms, watts)
    failed = {**_point("deit", "deit-b", "compile", 1), "status": "failed", "reason": f"compile: {OOM}"}
    rows.append({**failed, "metric": "latency", "statistic": "median", "value": np.nan, "unit": "ms"})
    return pd.DataFrame(rows)


def full_deit_table() -> pd.DataFrame:
    """A full sweep's shape: two precisions, batch 1 and 8, three modes, two runs each."""
    rows = []
    for precision in ("fp32", "fp16"):
        for batch in (1, 8):
            for model, base in (("deit-t", 4.0), ("deit-b", 9.0)):
                for mode, speed in (("eager", 1.0), ("compile", 0.7), ("cudagraph", 0.2)):
                    for run in (1, 2):
                        ms = base * speed * batch**0.5 * (1 + 0.05 * run)
                        rows += _rows(_point("deit", model, mode, run, precision, batch), ms, 10.0 * base / 4)
    return pd.DataFrame(rows)


def quick_bert_table() -> pd.DataFrame:
    rows = []
    for model, seq, watts in (("bert-b", 128, 20.0), ("bert-b", 384, 22.0), ("bert-l", 320, 60.0)):
        for run in (1, 2, 3):
            keys = _point("bert", model, "eager", run, seq_len=float(seq))
            rows += _rows(keys, 6.0 + run, watts + run, half_width=4.0)
    return pd.DataFrame(rows)


def _axes(fig: Figure) -> dict[str, Axes]:
    """Panels by title's first line ("latency", ...), of the first row (the claims' view: fp16, batch 1)."""
    first = [ax for ax in fig.axes if ax.get_title().endswith("fp16, batch 1")]
    return {ax.get_title().split("\n")[0]: ax for ax in first}


def _points(ax: Axes) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The drawn points of each mode: (x, y), by the mode's marker."""
    lines = [
        line for line in ax.get_lines() if line.get_marker() not in (None, "None", "", " ", "_")
    ]  # no caps
    return {
        str(line.get_marker()): (np.asarray(line.get_xdata()), np.asarray(line.get_ydata())) for line in lines
    }


def _bars(ax: Axes) -> list[tuple[float, float]]:
    """(low, high) of every vertical error bar."""
    spans = []
    for collection in ax.collections:
        if isinstance(collection, LineCollection):
            for segment in collection.get_segments():
                if len(segment) == 2 and segment[0][0] == segment[1][0]:
                    spans.append((float(min(segment[:, 1])), float(max(segment[:, 1]))))
    return spans


def _marks(ax: Axes) -> list[tuple[float, float]]:
    """The published figures' marks: (x centre, value) of each horizontal black bar."""
    marks = []
    for collection in ax.collections:
        if isinstance(collection, LineCollection):
            for segment in collection.get_segments():
                if len(segment) == 2 and segment[0][1] == segment[1][1]:
                    marks.append((float(segment[:, 0].mean()), float(segment[0][1])))
    return marks


def _notes(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.texts if t.get_fontsize() == NOTE_PT)


def _legend(fig: Figure) -> set[str]:
    return {t.get_text() for legend in fig.legends for t in legend.get_texts()}


def test_one_panel_per_metric_models_side_by_side_mode_as_hue() -> None:
    fig = inference_plot.plot(quick_deit_table(), "deit", inference_plot.published("deit"))
    panels = _axes(fig)
    assert list(panels) == [LATENCY, POWER, ENERGY] and len(fig.axes) == 3  # one row: fp16, batch 1
    for title, ax in panels.items():
        assert [t.get_text() for t in ax.get_xticklabels()] == ["deit-t", "deit-s", "deit-b"], title
        assert ax.get_xlabel() == "model"
    assert panels[LATENCY].get_ylabel() == "ms per inference (median of a process's blocks)"
    assert panels[POWER].get_ylabel() == "W above active idle, at the point's median pace"
    eager, graph = _points(panels[LATENCY])["o"], _points(panels[LATENCY])["s"]  # eager first, then cudagraph
    assert eager[1] == pytest.approx([4.6, 5.1, 8.95])  # medians over three runs
    assert graph[1] == pytest.approx([0.98]) and graph[0][0] > eager[0][2]  # dodged right of eager deit-b
    assert {"eager", "cudagraph", "A100 80GB published"} <= _legend(fig)
    assert "compile" not in _legend(fig)  # the failed mode has no point; it is listed under the figure
    assert "failed (compile: CUDA out of memory." in _notes(fig)


def test_error_bars_are_the_interval_across_runs() -> None:
    fig = inference_plot.plot(quick_deit_table(), "deit", inference_plot.published("deit"))
    latency = _axes(fig)[LATENCY]
    expected = across_processes([7.9, 8.95, 10.4])
    assert (expected.low, expected.high) in [pytest.approx(span) for span in _bars(latency)]
    power = _axes(fig)[POWER]
    assert _points(power)["o"][1] == pytest.approx([3.4, 9.0, 19.1])  # above active idle, not above idle
    assert "one run per point" not in _notes(fig)


def test_one_run_shows_the_powers_interval_within_it() -> None:
    fig = inference_plot.plot(quick_deit_table(runs=1), "deit", inference_plot.published("deit"))
    power, latency = _axes(fig)[POWER], _axes(fig)[LATENCY]
    assert (16.5, 19.5) in [pytest.approx(span) for span in _bars(power)]  # 18 +- 1.5 W, run 1's ci
    assert all(low == pytest.approx(high) for low, high in _bars(latency))  # no interval from one run
    assert "one run per point: no interval across runs" in _notes(fig)


def test_the_a100_latency_is_marked_and_its_power_above_another_idle_is_only_named() -> None:
    """The claims file's numbers, through the claim loader: 4.37 ms beside DeiT-B's latency; 68-61, 72-61,
    87-61 W and (87 - 61) W x 4.37 ms are above an idle with no CUDA context, which no panel is."""
    fig = inference_plot.plot(quick_deit_table(), "deit")  # default: the shipped claims file
    panels = _axes(fig)
    assert [value for _, value in _marks(panels[LATENCY])] == pytest.approx([4.37])
    assert round(_marks(panels[LATENCY])[0][0]) == 2  # at deit-b
    assert not _marks(panels[POWER]) and not _marks(panels[ENERGY])  # axes above active idle
    notes = " ".join(_notes(fig).split())
    assert "A100 80GB published power above idle and energy per inference above idle not drawn" in notes
    assert "(deit-t 7 W, deit-s 11 W, deit-b 26 W, deit-b 0.114 J)" in notes
    assert "no CUDA context" in notes and "above active idle" in notes
    assert "A100 80GB published" in _legend(fig)  # the latency's mark
    # a mark is no reading: off the A100 the verdict reads the eager batch-1 latency as the host's
    assert (
        "A100 80GB published deit-b 4.37 ms drawn as published: off the A100 80GB the verdict reads it as "
        "host-bound (eager batch-1 latency is the host's" in notes
    )


def test_on_the_papers_gpu_a_mark_needs_no_off_paper_note() -> None:
    table = quick_deit_table().assign(gpu_name="NVIDIA A100-SXM4-80GB")
    fig = inference_plot.plot(table, "deit")
    assert "drawn as published" not in _notes(fig)


def test_a_published_figure_of_the_panels_own_basis_is_drawn_on_it() -> None:
    """What decides is the basis, not the family: a figure published above active idle has its panel."""
    references = inference_plot.published("deit")
    power = references["claim"] == "deit-b-a100-power-above-idle"
    references.loc[power, ["panel", "basis"]] = POWER
    fig = inference_plot.plot(quick_deit_table(), "deit", references)
    assert [value for _, value in _marks(_axes(fig)[POWER])] == pytest.approx([26.0])
    notes = " ".join(_notes(fig).split())
    assert "not drawn (deit-t 7 W, deit-s 11 W, deit-b 0.114 J)" in notes
    assert "deit-b 4.37 ms, deit-b 26 W drawn as published" in notes and "as informational" in notes


def test_a_bar_far_above_its_point_is_cut_and_says_where_it_ends() -> None:
    """Two processes 2x apart (a CPU's eager latency): t = 12.7 takes the interval to hundreds of times
    the point; the axis stops at CLIP times the highest point, and the bar says where it ends."""
    rows = _rows(_point("deit", "deit-t", "eager", 1), 500.0, 3.0) + _rows(
        _point("deit", "deit-t", "eager", 2), 1000.0, 3.0
    )
    fig = inference_plot.plot(pd.DataFrame(rows), "deit", inference_plot.published("deit"))
    latency = _axes(fig)[LATENCY]
    high = across_processes([500.0, 1000.0]).high
    assert high > 10 * 1000 and latency.get_ylim()[1] == pytest.approx(750 * inference_plot.CLIP)
    assert [t.get_text() for t in latency.texts if t.get_text().startswith("bar to")] == [
        f"bar to {high:,.0f}"
    ]


def test_published_figures_come_from_the_claims_file() -> None:
    deit = inference_plot.published("deit").set_index("claim")
    assert deit.loc["deit-b-a100-latency-bs1-amp", "value"] == 4.37
    assert deit.loc["deit-b-a100-latency-bs1-amp", "panel"] == LATENCY
    assert deit.loc["deit-b-a100-power-above-idle", "panel"] == ""  # no panel is above that idle
    assert deit.loc["deit-b-a100-power-above-idle", "basis"] == "power above idle"
    assert "deit-power-order" not in deit.index and "deit-b-a100-latency-stability" not in deit.index
    bert = inference_plot.published("bert")
    assert sorted(bert["value"]) == [19.0, 53.0, 93.0] and set(bert["gpu"]) == {"A100 80GB"}


def test_a_full_sweep_has_a_row_per_precision_and_batch_the_claims_view_first() -> None:
    fig = inference_plot.plot(full_deit_table(), "deit", inference_plot.published("deit"))
    rows = [ax.get_title().split("\n")[1] for ax in fig.axes[::3]]
    assert rows == ["fp16, batch 1", "fp16, batch 8", "fp32, batch 1", "fp32, batch 8"]
    assert len(fig.axes) == 12
    latency = _axes(fig)[LATENCY]
    assert set(_points(latency)) == {"o", "s", "D"}  # eager, compile, cudagraph
    assert [t.get_text() for t in latency.get_xticklabels()] == ["deit-t", "deit-b"]
    assert {"eager", "compile", "cudagraph"} <= _legend(fig)


def test_bert_models_and_sequence_lengths_on_one_axis() -> None:
    fig = inference_plot.plot(quick_bert_table(), "bert", inference_plot.published("bert"))
    power = _axes(fig)[POWER]
    assert [t.get_text() for t in power.get_xticklabels()] == ["bert-b s128", "bert-b s384", "bert-l s320"]
    # BERT-L's 93 W above an idle with no context is not set against its power above active idle
    assert not _marks(power) and not _marks(_axes(fig)[LATENCY])  # and the BERT claims publish no latency
    assert "(bert-b s128 19 W, bert-b s384 53 W, bert-l s320 93 W)" in " ".join(_notes(fig).split())
    assert "A100 80GB published" not in _legend(fig)  # nothing drawn, nothing in the legend


def test_without_power_the_panels_say_so_and_the_a100_marks_say_where_they_would_be() -> None:
    table = quick_deit_table()
    table = table[table["metric"] == "latency"].assign(precision="fp32")  # a CPU run: no energy counter
    fig = inference_plot.plot(table, "deit", inference_plot.published("deit"))
    notes = _notes(fig)
    assert notes.startswith(inference_plot.NO_ENERGY)
    assert "A100 80GB published figures (fp16, batch 1): no point measured here to mark them by" in notes
    said = [t.get_text().replace("\n", " ") for ax in fig.axes for t in ax.texts]
    assert any("not measured at fp32, batch 1" in text for text in said)


def test_the_cli_draws_it(tmp_path: Path) -> None:
    table, png = tmp_path / "inference_deit.csv", tmp_path / "deit.png"
    quick_deit_table().to_csv(table, index=False)
    assert cli.main(["plot", "deit", str(table), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_panel_whose_points_span_twenty_times_is_drawn_on_a_log_axis() -> None:
    """DeiT-B's CUDA graph draws about 160 W above active idle, eager DeiT-T about 3: on a linear axis the
    eager points whose order the claims read would lie flat at its foot; the latency and energy panels,
    whose points span less, stay linear from 0."""
    panels = _axes(inference_plot.plot(quick_deit_table(), "deit", inference_plot.published("deit")))
    assert panels[POWER].get_yscale() == "log"
    low, high = panels[POWER].get_ylim()
    assert low < 3.4 and high > 163.0  # every point shows
    assert panels[LATENCY].get_yscale() == "linear" and panels[LATENCY].get_ylim()[0] == 0
    assert panels[ENERGY].get_yscale() == "linear"
