"""One GPU's process of a node job (campaign/node.py, handed `measure` by `gpurepro campaign node`: the
worker runs a subcommand, which lies above the campaign package): it sees only its own GPU, waits at the
node's barrier with the others, notes when it was let go, and runs `gpurepro sgemm` as a job on its own
would, its provenance naming when each of the node's processes was let go.

Started by multiprocessing's spawn, so it imports only this module until its GPU is set: CUDA reads
CUDA_VISIBLE_DEVICES once, when it starts."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import MutableSequence
from multiprocessing.synchronize import Barrier
from pathlib import Path


def measure(argv: list[str], visible: str | None, log: str, barrier: Barrier, starts: MutableSequence[float],
            devices: list[str], key: str, timeout_s: float) -> None:  # fmt: skip
    """Run `gpurepro sgemm ...` (`argv`) after the barrier; exit with its status. Its start goes into
    `starts` (shared, in the place of `key` among `devices`), and every process's into its provenance."""
    if visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible
    with Path(log).open("a") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    # the heavy imports here, before the barrier, so they do not skew the start
    from .. import provenance
    from ..forkserver.protocol import FORKED_VAR
    from . import runner, sgemm

    # spawned: an interpreter of its own, also where the node job was forked from the run's fork server
    os.environ.pop(FORKED_VAR, None)
    barrier.wait(timeout=timeout_s)
    starts[devices.index(key)] = time.time()
    # once more, so that every start is known (microseconds later, alike for all) before any is filed
    barrier.wait(timeout=timeout_s)
    times = dict(zip(devices, starts[:], strict=True))
    os.environ[provenance.NODE_JOB_VAR] = json.dumps({
        "device": key, "start_time": times[key], "start_times": times,
        "start_skew_s": max(times.values()) - min(times.values()),
    })  # fmt: skip
    sys.stdout.flush()
    status = runner.run(runner.build_parser([sgemm]), argv)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(status)
