"""The order of a round's points within their claim group: seeded, and reversed from one round to the
next, so a ratio's two sides take turns going first and a slow spell of the host falls on both.

Round r of every point runs before round r + 1 of any (rounds.py), and within a round the points one
claim compares share a GPU and run one after another (placement/groups.py). Which of them goes first was
Snakemake's choice among ready jobs, not the order they are listed in (six jobs of a toy workflow, each
holding one GPU resource, listed c a f b e d ran b a c e f d; listed e b d a c f, a b e c d f), so a
host slow for a minute could fall on one side of a ratio in every round. Here each point waits for the
one before it in its group's order of its round, among the points a claim reads
(more_processes/purpose.py): a permutation of the group's points drawn from the
config's `seed` and the group's name, reversed in every even round. Two sides A, B run A B, then B A,
then A B (or the other way round), so neither side is always first (Kalibera and Jones: randomise the
order of what is compared). The rounds of more processes a claim asks for afterwards give one side a
process at a time past three, so they have no pair to alternate and keep Snakemake's order.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from . import registry, rounds
from .more_processes import purpose
from .placement.groups import group_of

Point = tuple[tuple[str, str], ...]  # a point's wildcards but its run, as text, sorted


def _point(wildcards: Mapping[str, Any]) -> Point:
    return tuple(sorted((name, str(value)) for name, value in wildcards.items() if name != "run"))


def group_order(points: Iterable[Point], group: str, seed: int) -> list[Point]:
    """A group's points in the order its odd rounds run them: a permutation drawn from the seed and the
    group's name (crc32: the same in every process, as Python's own hash is not)."""
    ordered = sorted(set(points))
    rng = np.random.default_rng([seed, zlib.crc32(group.encode())])
    return [ordered[i] for i in rng.permutation(len(ordered))]


@functools.cache
def _before(
    rule: str, planned: tuple[tuple[Point, int], ...], section_json: str, seed: int
) -> dict[tuple[Point, int], Point]:
    """Each (point, round) of the points a claim reads -> the one before it in its group's order of that
    round (none for the first)."""
    family, section = registry.PLACED[rule].family, json.loads(section_json)
    groups: dict[str, list[Point]] = {}
    for point, _ in planned:
        if purpose.claims_reading(family, section, dict(point)):
            groups.setdefault(str(group_of(rule, dict(point))), []).append(point)
    present = set(planned)
    before: dict[tuple[Point, int], Point] = {}
    for group, members in groups.items():
        order = group_order(members, group, seed)
        for run in sorted({run for _, run in planned}):
            in_round = [p for p in (order if run % 2 else order[::-1]) if (p, run) in present]
            before.update({(p, run): q for q, p in zip(in_round, in_round[1:], strict=False)})
    return before


def waits_for(
    rule: str,
    pattern: str,
    points: Sequence[Mapping[str, Any]],
    wildcards: Mapping[str, Any],
    section: Mapping[str, Any],
    seed: int,
) -> list[str]:
    """The files a point's job of `rule` (its study's profile `section`) waits for: round r - 1 of every
    point of the sweep (`points` with their run; rounds.previous_round) and, for a point a claim reads,
    the one just before it in its group's order of round r, where it has one. Points only a figure
    shows keep Snakemake's order: chained too, they held their GPU-bound neighbours behind host-paced
    jobs that wait for the whole host (the full plan on eight H100s went from 1 h 42 min to 3 h 05 min)."""
    wanted = dict(wildcards.items())
    run = int(wanted["run"])
    files = rounds.previous_round(pattern, points, run)
    planned = tuple((_point(p), int(p["run"])) for p in points)
    order = _before(rule, planned, json.dumps(section, sort_keys=True, default=str), seed)
    before = order.get((_point(wanted), run))
    return files if before is None else [*files, pattern.format(**dict(before), run=run)]
