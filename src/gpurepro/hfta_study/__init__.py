"""The HFTA throughput study: B copies of a model trained one after another (`serial`), as B processes
sharing one GPU (`concurrent`), as B processes under the MPS daemon (`mps`), and horizontally fused into
one wide model in one process (`hfta`, the fusion library `gpurepro.hfta`), as throughput curves over B.

Modules: `training` (one training process), `launcher` (the B processes of concurrent/mps), `worker` (the
entry point each of them starts from), `mps` (the daemon's lifetime), `dcgm_summary` (DCGM metrics of
each point's training window, where DCGM sampled them), `point` (one sweep point under the shared
harness), `summary` (the tidy table, normalised throughput and speedups), `plot`.
"""

from collections.abc import Mapping
from typing import Any

from ..registry import STEP_COMPILED, STEP_GRAPHED, STEP_STOCK

# The fusion library's workloads (gpurepro.hfta.WORKLOAD_NAMES), named here so the CLI can list them
# without importing torch models.
WORKLOADS = ("resnet18", "transformer", "mlp")
MODES = ("serial", "concurrent", "mps", "hfta")
# How a point's training steps ran (registry.py names them, since the verdict reads them too)
STEPS = (STEP_STOCK, STEP_GRAPHED, STEP_COMPILED)
# fp32 is true FP32 (TF32 off); fp16 and bf16 are AMP (autocast; fp16 with a gradient scaler).
PRECISIONS = ("fp32", "fp16", "bf16")
OPTIMIZERS = ("sgd", "adamw")  # gpurepro.hfta.OPTIMIZERS
DATA_SOURCES = ("synthetic", "tiny-imagenet")
# Raw-file status of a point: measured, out of memory, failed otherwise, or not runnable here.
STATUSES = ("ok", "oom", "failed", "skipped")


def min_timed_s(profile_hfta: Mapping[str, Any], config: Mapping[str, Any]) -> float:
    """Seconds each unit trains after its warm-up at the least: the device profile's hfta.min_timed_s,
    else the config's, and never less than telemetry.min_energy_window_s (the point's energy is read over
    that window). What the workflow passes `gpurepro hfta --min-timed-s` and the run plan estimates."""
    own = profile_hfta.get("min_timed_s", config["hfta"].get("min_timed_s", 0.0))
    return max(float(own), float(config["telemetry"]["min_energy_window_s"]))
