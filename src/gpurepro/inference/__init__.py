"""The inference study: DeiT-T/S/B (timm) and BERT-B/L (transformers) latency and energy per inference,
in eager, torch.compile and CUDA graph modes, under the shared measurement protocol (harness.py)."""

from collections.abc import Mapping
from typing import Any

# What a device profile's inference section (or its quick block) may set instead of the config's
# inference section: the seconds of timed blocks and of the energy window.
TIMING_KEYS = ("min_run_time_s", "energy_window_s")


def timing(profile_inference: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, float]:
    """The seconds of a point's timed blocks (`min_run_time_s`) and of its energy window
    (`energy_window_s`): the device profile's inference section where it sets them (a quick run's own
    values), else the config's inference section; the window never shorter than
    telemetry.min_energy_window_s, the shortest NVML's counter is trusted over. What the workflow passes
    `gpurepro infer` and the run plan estimates."""
    own = {key: float(profile_inference.get(key, config["inference"][key])) for key in TIMING_KEYS}
    own["energy_window_s"] = max(own["energy_window_s"], float(config["telemetry"]["min_energy_window_s"]))
    return own
