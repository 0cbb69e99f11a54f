"""How NVML's total-energy counter updates, and what reading a window's edges at arbitrary instants costs.

A power from an energy window is (counter at the end - counter at the start) / (end - start). The counter
holds its value between updates, so a read at an arbitrary instant returns the energy up to the last
update, up to one update interval earlier: the window's energy and its wall time then disagree by up to
that interval at each edge. This benchmark, on one GPU holding a CUDA context and otherwise at rest:

1. polls the counter for `--poll-s` seconds and reports the intervals between its updates (median,
   percentiles, the longest, how many exceed 50 ms);
2. measures `--windows` windows of `--window-s` seconds each way, alternating: read at the instants the
   window opens and closes (as the harness's energy windows do), and aligned to the counter's updates
   (each edge waits for the counter to change and takes that instant); prints each window's power and,
   per way, the median, the range and the standard deviation.

    python benchmarks/energy_counter_edges.py --gpu 0 --poll-s 10 --windows 10 --window-s 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pynvml


def _energy_j(handle: object) -> float:
    return pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0  # mJ -> J


def _next_update(handle: object, limit_s: float = 1.0) -> tuple[float, float]:
    """(instant, joules) of the counter's next change, polled in a tight loop."""
    before = _energy_j(handle)
    deadline = time.perf_counter() + limit_s
    while time.perf_counter() < deadline:
        now = _energy_j(handle)
        if now != before:
            return time.perf_counter(), now
    raise RuntimeError(f"the energy counter did not change within {limit_s} s")


def update_intervals(handle: object, seconds: float) -> np.ndarray:
    """Seconds between the counter's successive changes over `seconds` of polling."""
    changes = []
    last = _energy_j(handle)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        now = _energy_j(handle)
        if now != last:
            changes.append(time.perf_counter())
            last = now
    return np.diff(np.array(changes))


def naive_window(handle: object, seconds: float) -> float:
    start, before = time.perf_counter(), _energy_j(handle)
    time.sleep(seconds)
    after, end = _energy_j(handle), time.perf_counter()
    return (after - before) / (end - start)


def aligned_window(handle: object, seconds: float) -> float:
    start, before = _next_update(handle)
    time.sleep(max(seconds - 0.05, 0.0))
    end, after = _next_update(handle)
    return (after - before) / (end - start)


def _summary(name: str, powers: list[float]) -> str:
    return (
        f"{name}: median {statistics.median(powers):.2f} W, range {min(powers):.2f}-{max(powers):.2f} W, "
        f"SD {statistics.stdev(powers):.2f} W over {len(powers)} windows"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--poll-s", type=float, default=10.0)
    parser.add_argument("--windows", type=int, default=10)
    parser.add_argument("--window-s", type=float, default=3.0)
    args = parser.parse_args()
    import torch  # a context on the GPU, as the harness's active idle holds one

    torch.cuda.set_device(args.gpu)
    hold = torch.ones(1 << 20, device=f"cuda:{args.gpu}")
    torch.cuda.synchronize()
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(args.gpu)
    print(f"GPU {args.gpu}: {pynvml.nvmlDeviceGetName(handle)}, {pynvml.nvmlDeviceGetUUID(handle)}")
    gaps = update_intervals(handle, args.poll_s) * 1e3
    print(
        f"counter updates over {args.poll_s:g} s: {len(gaps) + 1}; interval median {np.median(gaps):.1f} ms, "
        f"5th-95th percentile {np.percentile(gaps, 5):.1f}-{np.percentile(gaps, 95):.1f} ms, "
        f"longest {gaps.max():.1f} ms, {int((gaps > 50).sum())} over 50 ms"
    )
    naive, aligned = [], []
    for i in range(args.windows):
        naive.append(naive_window(handle, args.window_s))
        aligned.append(aligned_window(handle, args.window_s))
        print(f"window {i + 1}: read at its edges {naive[-1]:.2f} W, aligned to updates {aligned[-1]:.2f} W")
    print(_summary("read at its edges", naive))
    print(_summary("aligned to updates", aligned))
    del hold


if __name__ == "__main__":
    main()
