"""`gpurepro detect`: the GPUs NVML sees and the device profile `device=auto` would pick."""

from __future__ import annotations

import argparse
import json

from .. import nvml
from ..profiles import pick_profile

FIELDS = [
    ("name", "name"),
    ("uuid", "UUID"),
    ("serial", "serial"),
    ("pci_bus_id", "PCI bus"),
    ("driver_version", "driver"),
    ("cuda_driver_version", "CUDA (driver)"),
    ("compute_capability", "compute capability"),
    ("memory_total_mib", "memory (MiB)"),
    ("power_limit_w", "power limit (W)"),
    ("power_limit_default_w", "default power limit (W)"),
    ("sm_clock_mhz", "SM clock (MHz)"),
    ("sm_clock_max_mhz", "max SM clock (MHz)"),
    ("mem_clock_mhz", "memory clock (MHz)"),
    ("persistence_mode", "persistence mode"),
    ("ecc_mode", "ECC"),
    ("compute_mode", "compute mode"),
    ("mig_mode", "MIG"),
    ("temperature_c", "temperature (C)"),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("detect", help="list GPUs (NVML) and the profile device=auto picks")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run)


def _show(value: object) -> str:
    if value is None:
        return "not reported"
    if isinstance(value, float):
        return f"{value:.0f}"
    return str(value)


def run(args: argparse.Namespace) -> int:
    try:
        gpus = nvml.all_gpu_info()
        reason = ""
    except nvml.NvmlUnavailable as err:
        gpus, reason = [], str(err)
    profile = pick_profile(gpus)
    if args.json:
        print(json.dumps({"gpus": [g.as_dict() for g in gpus], "profile": profile, "note": reason}, indent=2))
        return 0
    if not gpus:
        print(f"No NVIDIA GPU found: {reason or 'NVML reports none'}.")
    for gpu in gpus:
        print(f"GPU {gpu.index}")
        info = gpu.as_dict()
        for key, label in FIELDS:
            print(f"  {label:<24} {_show(info[key])}")
    print(f"device=auto picks profile: {profile}")
    return 0
