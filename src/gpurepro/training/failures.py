"""How a training rank tells its launcher why it failed: torchrun itself only knows exit codes, so each
rank files its reason in a folder the launcher names (launch.py sets it, rank.py files into it)."""

from __future__ import annotations

import os
from pathlib import Path

# Environment a launched rank reads: where to file its failure.
FAILURE_DIR = "GPUREPRO_TRAIN_FAILURE_DIR"


def file_failure(reason: str, rank: int) -> None:
    """A worker's reason for failing, for the launcher to record (no-op when not launched by it)."""
    folder = os.environ.get(FAILURE_DIR)
    if folder:
        (Path(folder) / f"rank{rank}.txt").write_text(f"rank {rank}: {reason}")


def first_failure(folder: Path) -> str | None:
    """The earliest filed reason: the rank that failed first caused the others' failures."""
    files = sorted(folder.glob("rank*.txt"), key=lambda p: p.stat().st_mtime)
    return files[0].read_text() if files else None
