"""A synthetic campaign: the raw layout a real one leaves (layout.py), from a documented model, to read a
cluster larger than can be rented through the same tables and figures, and to time them.

The model, per GPU g of node j and rep i of run r (time in ms; all draws seeded):

    log time = log base_ms + node_j + gpu_g + slow_g + run_gr + rep_gri
    node_j ~ N(0, node_sd)     what a node shares: its cooling, its power delivery
    gpu_g  ~ N(0, gpu_sd)      the card itself: its silicon, its voltage-frequency curve
    run_gr ~ N(0, run_sd), rep_gri ~ N(0, rep_sd)   the noise from process to process and rep to rep
    slow_g = log(1 + slow_scale * Lomax(slow_shape))  with probability slow_fraction, else 0

The last term is the heavy tail of slow cards (SC22 saw outliers up to 1.5x slower than the median GPU):
a Lomax (Pareto II) slowdown, so most slow cards are a few percent off and a few far off. A slow card is
held by a cap: at its power limit (reps flagged sw_power_cap) with probability power_cap_share, else
thermally (hot, reps flagged hw_thermal_slowdown). Power follows the rate below the limit (the work done
per second), the SM clock follows the rate, temperature has a node and a GPU part; energy per product is
power times time, one window per run as a real job measures it.

    power = min(power_w * speed^0.5 * exp(leakage_g), power_limit_w),  leakage_g ~ N(0, leakage_sd)
    speed = base_ms / time (1 for the median card); SM clock = sm_clock_mhz * speed
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..results import write_raw
from . import layout

TRUTH = "synthetic_truth.csv"  # each GPU's drawn effects, beside raw/, for checking what the tables find


@dataclass(frozen=True)
class Model:
    nodes: int = 16
    gpus_per_node: int = 4
    reps: int = 100
    runs: int = 1
    n: int = 25536
    backend: str = "cublas"
    profile: str = "v100"
    gpu_name: str = "Tesla V100-SXM2-16GB"  # as NVML names the profile's GPU
    base_ms: float = 2290.0  # a V100's cuBLAS SGEMM at N=25536 (the seed: 2264-2324 ms)
    node_sd: float = 0.01
    gpu_sd: float = 0.02
    run_sd: float = 0.002
    rep_sd: float = 0.003
    slow_fraction: float = 0.03
    slow_scale: float = 0.15
    slow_shape: float = 2.0
    max_slowdown: float = 1.8
    power_cap_share: float = 0.6
    power_limit_w: float = 300.0
    power_w: float = 260.0  # a healthy median card
    leakage_sd: float = 0.03  # cards of one rate draw different power
    sm_clock_mhz: float = 1380.0
    temperature_c: float = 55.0
    failed_nodes: int = 0  # the last nodes' attempts are recorded as failed, as a real failure is
    seed: int = 0  # draws the cards (their effects and UUIDs)
    noise_seed: int | None = None  # draws the reps (default: from `seed`); another one measures the same
    # cards again, as a second campaign on the same cluster would


def node_names(count: int) -> list[str]:
    width = max(3, len(str(count)))
    return [f"node{j + 1:0{width}d}" for j in range(count)]


def _gpu_effects(model: Model, rng: np.random.Generator) -> pd.DataFrame:
    """One row per GPU: its node, index, UUID and drawn effects."""
    nodes, per_node = model.nodes, model.gpus_per_node
    count = nodes * per_node
    node_effect = np.repeat(rng.normal(0, model.node_sd, nodes), per_node)
    node_heat = np.repeat(rng.normal(0, 3.0, nodes), per_node)
    slow = rng.random(count) < model.slow_fraction
    slowdown = np.minimum(1 + model.slow_scale * rng.pareto(model.slow_shape, count), model.max_slowdown)
    cap = np.where(slow, np.where(rng.random(count) < model.power_cap_share, "power", "thermal"), "none")
    return pd.DataFrame({
        "node": np.repeat(node_names(nodes), per_node),
        "gpu": np.tile(np.arange(per_node), nodes),
        "gpu_uuid": [f"GPU-{uuid.UUID(bytes=rng.bytes(16))}" for _ in range(count)],
        "node_effect": node_effect,
        "gpu_effect": rng.normal(0, model.gpu_sd, count),
        "slowdown": np.where(slow, slowdown, 1.0),
        "leakage": rng.normal(0, model.leakage_sd, count),
        "cap": cap,
        "temperature_c": model.temperature_c + node_heat + rng.normal(0, 2.0, count),
    })  # fmt: skip


def _reps(model: Model, gpu: pd.Series, run: int, rng: np.random.Generator) -> pd.DataFrame:
    """One GPU's reps of one run, in the raw files' columns."""
    log_ms = (np.log(model.base_ms) + gpu["node_effect"] + gpu["gpu_effect"] + np.log(gpu["slowdown"])
              + rng.normal(0, model.run_sd) + rng.normal(0, model.rep_sd, model.reps))  # fmt: skip
    ms = np.exp(log_ms)
    speed = model.base_ms / ms  # 1 for the median card
    power = np.minimum(model.power_w * speed**0.5 * np.exp(gpu["leakage"]), model.power_limit_w)
    if gpu["cap"] == "power":
        power = np.full(model.reps, model.power_limit_w)
    hot = gpu["cap"] == "thermal"
    temperature = np.full(model.reps, 88.0 if hot else gpu["temperature_c"]) + rng.normal(0, 0.3, model.reps)
    reason = {"power": "sw_power_cap", "thermal": "hw_thermal_slowdown"}.get(gpu["cap"], "")
    return pd.DataFrame({
        "profile": model.profile, "device": str(gpu["gpu"]), "backend": model.backend, "n": model.n,
        "run": run, "rep": np.arange(model.reps), "ms": ms, "tflops": 2 * model.n**3 / (ms * 1e-3) / 1e12,
        "power_w_median": power, "sm_clock_mhz_median": model.sm_clock_mhz * speed,
        "temperature_c_median": temperature, "throttled": bool(reason), "clock_event_names": reason,
    })  # fmt: skip


def _node_record(model: Model, node: str, gpus: pd.DataFrame, failed: bool) -> dict[str, object]:
    record: dict[str, object] = {
        "status": "failed" if failed else "measured",
        "reason": "synthetic: a GPU of the node did not answer NVML" if failed else "",
        "hostname": node,
        "synthetic": asdict(model),
        "gpus": [
            {"index": int(g.gpu), "name": model.gpu_name, "uuid": g.gpu_uuid,
             "serial": f"{int(g.gpu_uuid[-12:], 16) % 10**12:012d}",
             "pci_bus_id": f"00000000:{0x18 + 0x20 * int(g.gpu):02X}:00.0", "vbios": "88.00.4F.00.09",
             "power_limit_w": model.power_limit_w, "driver_version": "550.54.15", "start_time": 0.0}
            for g in gpus.itertuples()
        ],
    }  # fmt: skip
    return record


def write(model: Model, campaign: Path | str) -> pd.DataFrame:
    """Write a campaign's raw layout under `campaign`/raw and the drawn truth beside it; returns the
    truth (one row per GPU)."""
    campaign = Path(campaign)
    truth = _gpu_effects(model, np.random.default_rng(model.seed))
    noise = 0 if model.noise_seed is None else model.noise_seed + 1
    rng = np.random.default_rng([model.seed, noise])
    failed = set(node_names(model.nodes)[model.nodes - model.failed_nodes :])
    for node, gpus in truth.groupby("node", sort=True):
        folder = layout.attempt_dir(campaign / "raw", str(node), 1)
        folder.mkdir(parents=True, exist_ok=True)
        if node not in failed:
            for _, gpu in gpus.iterrows():
                for run in range(1, model.runs + 1):
                    reps = _reps(model, gpu, run, rng)
                    energy = float((reps["power_w_median"] * reps["ms"] / 1000).median())
                    window = {str(gpu["gpu"]): {"energy_per_op_j": energy}}
                    sidecar = {"synthetic": True, "gpus": [{"name": model.gpu_name, "uuid": gpu["gpu_uuid"]}],
                               "measurement": {"energy": window}}  # fmt: skip
                    write_raw(reps, folder / layout.raw_name(model.backend, gpu["gpu"], run), sidecar)
        layout.write_record(folder, _node_record(model, str(node), gpus, node in failed))
    truth.to_csv(campaign / TRUTH, index=False)
    return truth
