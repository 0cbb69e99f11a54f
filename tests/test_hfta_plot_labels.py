"""The HFTA figure's y axis says what is plotted (issue 42); why a run's figure is not normalised over
serial fp32 is said in its title, not in the axis label."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from gpurepro.hfta_study import plot as hfta_plot

from .test_plots import _hfta_table, _panel


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_without_a_serial_fp32_point_the_axis_says_samples_per_second_and_the_title_says_why() -> None:
    table = _hfta_table()
    table = table[table["metric"] == "throughput"]  # no normalised rows: no serial fp32 point
    fig = hfta_plot.plot(table)
    resnet = _panel(fig, "resnet18, batch 128 per model, fp32")
    assert resnet.get_ylabel() == "throughput (samples/s)"
    assert all("normalise" not in ax.get_ylabel() for ax in fig.axes)
    title = fig._suptitle.get_text().replace("\n", " ")
    assert title == f"{hfta_plot.TITLE.format(profile='a100')} ({hfta_plot.UNNORMALISED})"


def test_normalised_throughput_keeps_its_label_and_a_plain_title() -> None:
    fig = hfta_plot.plot(_hfta_table())
    resnet = _panel(fig, "resnet18, batch 128 per model, fp32")
    assert resnet.get_ylabel() == "throughput / stock serial fp32 at the same B"
    assert fig._suptitle.get_text().replace("\n", " ") == hfta_plot.TITLE.format(profile="a100")
