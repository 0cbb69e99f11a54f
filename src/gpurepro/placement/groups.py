"""The claim groups: the measuring points one claim compares, which share a GPU within a round.

Two cards of one model differ (SGEMM rates 1.9% [1.4, 2.4] apart across four H100s of one node started
within 0.1 ms; SC22 saw cards 1.5x slower than their cluster's median). A claim read as a ratio or a
difference of points cancels its card's offset only where both sides ran on the same card, and a process
is paired with the other side's process of the same round (process_stats.ratio_interval). So a group is
placed per round (the `run` wildcard: round r of a sweep runs before round r + 1, rounds.py), and may
move between rounds, where a card's offset widens the interval instead of biasing it.

Groups are named from a job's rule and wildcards alone, so the Snakemake rules, the estimate and a
cluster's job groups read the same groups:

- DeiT and BERT by (batch, precision): the claims order the models (DeiT-T < S < B; BERT-B s128 < s384 <
  BERT-L s320), take differences (DeiT-B's energy above active idle less DeiT-T's) and set eager beside
  the CUDA-graph replay (the host's share of eager latency), each at one batch and precision. No claim
  compares DeiT with BERT, so the families are groups of their own.
- HFTA by (workload, precision): the speedups set the fused array beside serial, concurrent and MPS
  training, over B and step kinds, of one workload at one precision.
- SGEMM and the reference rates as one group: tiled against cuBLAS at each N, and every absolute SGEMM
  rate scaled by the reference job's measured FP32 GEMM rate (measured against measured, like for
  like), which cancels the card's offset only on the same card. The group is pinned to the first
  selected GPU (packing.place), where DDP's one-GPU run measures too (training.plan.ddp_gpu_claims takes
  the first k GPUs): its images/s are scaled by the same job's FP16 GEMM rate and memory bandwidth.
  The scaled HFTA figure (fused B=32) runs on another card, which under placement measures its own
  reference rates (reference.smk: one job per GPU, not placed by group), so it is scaled by its own.

On a cluster (profiles/slurm) the same slots are Snakemake job groups (cluster_group): one SLURM
allocation with one GPU measures a slot's points one after another, so both sides of a ratio share a card
there too.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import registry

# The group whose GPU is fixed (the first selected): see the module's docstring.
REFERENCE_GROUP = "sgemm"
# The round of the processes a claim asks for after the planned rounds (more_processes.smk): a point's
# next run number, which differs between the points of a group (a GPU-bound point's third process runs
# beside a host-paced point's sixth), so they are placed by their group alone (packing.Placement.gpu).
EXTRA_ROUND = 0
# The name profiles/slurm's `group-components` gives every claim group's Snakemake group (the workflow
# maps each group to it), so that one group job spans all of its slot's jobs, none of which depends on
# another (Snakemake's groups are otherwise connected parts of the DAG).
CLUSTER_GROUPS = "claim_groups"

JobKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True, order=True)
class Slot:
    """A claim group in one round: what is placed on one GPU."""

    group: str
    round: int


def group_of(rule: str, wildcards: Mapping[str, Any]) -> str | None:
    """The claim group of a job ('deit/batch=1/precision=fp16'): its record's group and the values of its
    group wildcards (registry.py); None for a rule that is not placed."""
    placed = registry.PLACED.get(rule)
    if placed is None:
        return None
    names = placed.group_wildcards
    return "/".join([str(placed.group), *(f"{name}={wildcards[name]}" for name in names)])


def slot_of(rule: str, wildcards: Mapping[str, Any]) -> Slot | None:
    """The group and round of a planned job (a rule without `run` has one round)."""
    group = group_of(rule, wildcards)
    return None if group is None else Slot(group, int(wildcards.get("run", 1)))


def job_key(rule: str, wildcards: Mapping[str, Any]) -> JobKey:
    """A job as the plan names it: its rule and wildcards as strings (Snakemake's are strings, the
    sweeps' lists hold numbers)."""
    return rule, tuple(sorted((name, str(value)) for name, value in wildcards.items()))


def planned_keys(points: Iterable[tuple[str, Mapping[str, Any]]]) -> frozenset[JobKey]:
    """The planned measuring jobs (rule, wildcards) as job keys: what sets a process asked for after the
    planned rounds apart (cluster_group)."""
    return frozenset(job_key(rule, wildcards) for rule, wildcards in points)


def group_name(slot: Slot) -> str:
    """A slot as a Snakemake group name ('deit_batch-1_precision-fp16_round-2', 'hfta_net-mlp_precision-
    fp32_extra'): the SLURM plugin puts it in a log folder's name and in the job's comment, so it holds
    no '/', '=' or space."""
    round_ = "extra" if slot.round == EXTRA_ROUND else f"round-{slot.round}"
    return re.sub(r"[^A-Za-z0-9.-]+", "_", f"{slot.group}/{round_}".replace("=", "-"))


def cluster_group(rule: str, wildcards: Mapping[str, Any], planned: Collection[JobKey]) -> str | None:
    """The Snakemake group of a measuring job on a cluster: its slot's name; None for a rule that is not
    placed. The processes a claim asks for after the planned rounds (a point's next run, not among
    `planned`) form their group's extra round, whatever their run numbers, as packing.Placement.gpu
    places them: each extra round is planned once the one before it has run (more_processes.smk)."""
    slot = slot_of(rule, wildcards)
    if slot is None:
        return None
    if "run" in wildcards and job_key(rule, wildcards) not in planned:
        slot = Slot(slot.group, EXTRA_ROUND)
    return group_name(slot)


def cluster_settings_problem(cores: int | None, components: int) -> str | None:
    """Why a cluster run would not measure each slot in one allocation, one job at a time, or None.
    Snakemake asks for a group job's resources by stacking its jobs in layers that fit --cores: with 1
    each job is a layer of its own, so a group asks for the most GPUs, memory and CPUs of any one job and
    the sum of their runtimes; with more it asks for several GPUs. `components`: how many unconnected
    jobs one group may span (--group-components claim_groups=N)."""
    if cores != 1:
        return (
            f"--cores {cores} with the slurm profile: a claim group's job would ask SLURM for as many "
            "GPUs as fit that many of its points at once, and run them one at a time; keep "
            "profiles/slurm's cores: 1"
        )
    if components < 2:
        return (
            f"--group-components {CLUSTER_GROUPS}={components}: each measuring point would be an "
            "allocation of its own, so the two sides of a claim could run on different GPUs; keep "
            f"profiles/slurm's group-components {CLUSTER_GROUPS}=100000"
        )
    return None
