"""What every HFTA test shares: one CPU thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """These ops are small: threads gain nothing, and on a busy machine OpenMP threads that spin
    waiting for each other made the fusion tests five times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
