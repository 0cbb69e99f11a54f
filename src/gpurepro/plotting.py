"""Shared figure set-up: a non-interactive backend and one look for every study's plots."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # rules run headless; never try to open a window
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def figure(columns: int, title: str) -> tuple[Figure, list]:
    fig, axes = plt.subplots(1, columns, figsize=(5.2 * columns, 4.2), squeeze=False)
    fig.suptitle(title)
    return fig, list(axes[0])


def save(fig: Figure, path: Path | str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
