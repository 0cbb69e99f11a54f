"""Claim groups packed onto the selected GPUs of one machine, and the record a run keeps of it.

Round by round, a round's groups go longest first onto the GPU with the least work so far (the classic
longest-processing-time rule: the short groups left for last even out the ends, within 4/3 of the best
packing). Round by round, because round r + 1 of a sweep waits for round r (rounds.py): a round packed
evenly lets the next one start on every GPU at about the same time, and a group may land on another card
in the next round, so a card's offset widens its interval instead of biasing it. The lengths are the
studies' models (runplan.durations), never a machine's earlier benchmark files: the same config and GPU
selection always give the same placement, so a run stopped mid-round and started again keeps each
group of that round on its GPU.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .groups import EXTRA_ROUND, REFERENCE_GROUP, JobKey, Slot, group_of, job_key, slot_of


def pack(lengths: Mapping[Slot, float], gpus: Sequence[int], pinned: Mapping[str, int]) -> dict[Slot, int]:
    """Each slot's GPU: round by round, pinned groups onto their GPU, then the others longest first,
    each onto the GPU with the least seconds so far (the first such GPU of `gpus` on a tie)."""
    if not gpus:
        raise ValueError("no GPU to place claim groups on")
    load = dict.fromkeys(gpus, 0.0)
    placed: dict[Slot, int] = {}
    for round_ in sorted({slot.round for slot in lengths}):
        slots = sorted(
            (slot for slot in lengths if slot.round == round_),
            key=lambda slot: (slot.group not in pinned, -lengths[slot], slot.group),
        )
        for slot in slots:
            gpu = pinned.get(slot.group)
            if gpu is None:
                gpu = min(gpus, key=lambda g: load[g])
            placed[slot] = gpu
            load[gpu] += lengths[slot]
    return placed


@dataclass(frozen=True)
class Placement:
    """Where each planned measuring job runs: its slot (group and round) and the slot's GPU."""

    gpus: tuple[int, ...]
    jobs: Mapping[JobKey, Slot]
    slots: Mapping[Slot, int]

    def gpu(self, rule: str, wildcards: Mapping[str, Any]) -> int | None:
        """The GPU of a job; None for a rule that is not placed. A process a claim asks for after the
        planned rounds (not among the planned jobs) goes to its group's GPU of the group's first round,
        so the processes of one extra round of a group share a GPU whatever their run numbers."""
        group = group_of(rule, wildcards)
        if group is None:
            return None
        slot = self.jobs.get(job_key(rule, wildcards), Slot(group, EXTRA_ROUND))
        if slot in self.slots:
            return self.slots[slot]
        rounds = sorted(s for s in self.slots if s.group == group)
        return self.slots[rounds[0]] if rounds else self.gpus[0]

    def seconds(self, lengths: Mapping[Slot, float]) -> dict[int, float]:
        """The seconds of `lengths` each GPU holds."""
        held = dict.fromkeys(self.gpus, 0.0)
        for slot, gpu in self.slots.items():
            held[gpu] += lengths.get(slot, 0.0)
        return held

    def record(self) -> dict[str, Any]:
        """What `<results>/placement.json` keeps: each group's GPU round by round."""
        groups: dict[str, dict[str, int]] = {}
        for slot, gpu in sorted(self.slots.items()):
            groups.setdefault(slot.group, {})[str(slot.round)] = gpu
        return {
            "gpus": list(self.gpus),
            "rule": (
                "the points of a claim group share a GPU within a round (group -> round -> GPU); the "
                "processes a claim asks for after the planned rounds run on their group's GPU of round 1"
            ),
            "groups": groups,
        }


def lengths_of(jobs: Iterable[tuple[str, Mapping[str, Any]]], seconds: Iterable[float]) -> dict[Slot, float]:
    """The seconds each slot's jobs take in all; jobs of rules that are not placed are left out."""
    lengths: dict[Slot, float] = {}
    for (rule, wildcards), s in zip(jobs, seconds, strict=True):
        slot = slot_of(rule, wildcards)
        if slot is not None:
            lengths[slot] = lengths.get(slot, 0.0) + s
    return lengths


def place(
    jobs: Sequence[tuple[str, Mapping[str, Any]]], seconds: Sequence[float], gpus: Sequence[int]
) -> Placement:
    """The placement of the planned measuring jobs (rule, wildcards) of their modelled `seconds` on
    `gpus`, the reference group on the first of them (groups.py says why)."""
    lengths = lengths_of(jobs, seconds)
    slots = pack(lengths, gpus, {REFERENCE_GROUP: gpus[0]} if gpus else {})
    planned = {}
    for rule, wildcards in jobs:
        slot = slot_of(rule, wildcards)
        if slot is not None:
            planned[job_key(rule, wildcards)] = slot
    return Placement(tuple(gpus), planned, slots)


def write(placement: Placement, path: Path) -> Path:
    """The placement's record at `path`, replaced whole (a run started again with other GPUs places
    anew; each raw file's provenance names the GPU that measured it by UUID)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as draft:
        json.dump(placement.record(), draft, indent=1)
    os.replace(draft.name, path)
    return path
