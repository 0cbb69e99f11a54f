"""Ranks, devices and the process group of a data-parallel run under torchrun.

torchrun starts one process per GPU and tells each its place in the environment (RANK, LOCAL_RANK,
WORLD_SIZE, and where to meet). Each process trains on its own GPU; DistributedDataParallel averages
the gradients over NCCL (gloo on the CPU) during the backward pass, so every rank takes the same step.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..errors import GpureproError


@dataclass(frozen=True)
class World:
    """This process's place: rank among all, rank on this host, and how many processes there are."""

    rank: int
    local_rank: int
    size: int

    @property
    def leader(self) -> bool:
        """Rank 0 writes the results; the other ranks only train."""
        return self.rank == 0


SINGLE = World(0, 0, 1)


def under_torchrun() -> bool:
    return "LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ


def world_from_environment() -> World:
    """The world torchrun describes, or a single process when not started by torchrun."""
    if not under_torchrun():
        return SINGLE
    return World(int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), int(os.environ["WORLD_SIZE"]))


def cuda_index(nvml_index: int) -> int:
    """CUDA's number for NVML's GPU `nvml_index`. The launcher makes only the run's GPUs visible
    (CUDA_VISIBLE_DEVICES=2,3): CUDA numbers them 0, 1 in that order. Without the variable CUDA numbers
    every GPU as NVML does (CUDA_DEVICE_ORDER=PCI_BUS_ID, set by every `gpurepro` command)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return nvml_index
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    if str(nvml_index) not in entries:
        raise GpureproError(
            f"CUDA_VISIBLE_DEVICES='{visible}' does not list GPU {nvml_index} by its index; unset it and "
            "pass the GPUs' NVML indices with --gpus"
        )
    return entries.index(str(nvml_index))


def start(device: torch.device) -> None:
    """Join the process group: NCCL between GPUs, gloo between CPU processes."""
    if device.type == "cuda":
        dist.init_process_group("nccl", device_id=device)
    else:
        dist.init_process_group("gloo")


def stop() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def any_rank(flag: bool, device: torch.device) -> bool:
    """True on every rank when it is True on any rank (all ranks must call this together)."""
    if not dist.is_initialized():
        return flag
    tensor = torch.tensor([int(flag)], device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return bool(tensor.item())


def parameter_checksum(model: torch.nn.Module) -> str:
    """SHA-256 of every parameter's bytes: equal on all ranks when DDP kept them in step."""
    digest = hashlib.sha256()
    for parameter in model.parameters():
        digest.update(parameter.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def gather(value: object) -> list[object]:
    """Every rank's value, in rank order (collective); [value] without a process group."""
    if not dist.is_initialized():
        return [value]
    values: list[object] = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values
