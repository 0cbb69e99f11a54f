"""One GPU's process of a node job (campaign/node.py, handed `measure` by `gpurepro campaign node`: the
worker runs a subcommand, which lies above the campaign package): it sees only its own GPU, waits at the
node's barrier with the others, notes when it was let go, and runs `gpurepro sgemm` as a job on its own
would.

Started by multiprocessing's spawn, so it imports only this module until its GPU is set: CUDA reads
CUDA_VISIBLE_DEVICES once, when it starts."""

from __future__ import annotations

import os
import sys
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path


def measure(argv: list[str], visible: str | None, log: str, barrier: Barrier, started: Queue, key: str,
            timeout_s: float) -> None:  # fmt: skip
    """Run `gpurepro sgemm ...` (`argv`) after the barrier; exit with its status."""
    if visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible
    with Path(log).open("a") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    # the heavy imports here, before the barrier, so they do not skew the start
    from . import runner, sgemm

    barrier.wait(timeout=timeout_s)
    started.put((key, time.time()))
    sys.stdout.flush()
    status = runner.run(runner.build_parser([sgemm]), argv)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(status)
