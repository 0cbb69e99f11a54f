"""Shared figure set-up: a non-interactive backend and one look for every study's plots."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # rules run headless; never try to open a window
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def figure(columns: int, title: str, rows: int = 1) -> tuple[Figure, list]:
    """A figure of rows x columns panels, returned as one flat list of axes."""
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.2 * rows), squeeze=False)
    fig.suptitle(title)
    return fig, list(axes.flat)


def not_reported(ax, what: str) -> None:
    """Say in the panel that the device does not report this, rather than leave it blank."""
    ax.text(
        0.5, 0.5, f"{what}\nnot reported by this device", ha="center", va="center", transform=ax.transAxes
    )
    ax.set_axis_off()


def save(fig: Figure, path: Path | str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
