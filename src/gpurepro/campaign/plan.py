"""Which nodes a campaign measures, which it cannot, and which attempt each is at.

The config names the nodes as SLURM hostlists (`node[001-064]`, `gpu[1-4,7],big01`), or a partition and
a node count. sinfo says which of them SLURM will not run a job on (drained, down, in maintenance...):
those are recorded as unavailable, with SLURM's reason, instead of being submitted (their jobs would
wait in the queue for as long as the node stays out). Where SLURM is not installed, every node is taken
as available: a campaign of this machine alone.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GpureproError
from . import layout

BRACKET = re.compile(r"\[([^\]]+)\]")
# sinfo's node states (%T) a job is not started on; a trailing *, ~, #, ! or % marks a flag, not a state.
UNAVAILABLE = re.compile(
    r"^(drain|drained|draining|down|fail|failing|maint|inval|unknown|future|not_responding|powered_down|"
    r"powering_down|power_down|reboot_issued|reboot_requested)"
)
SINFO_TIMEOUT_S = 60


def _ranges(spec: str) -> list[str]:
    """`001-003,7` -> ['001', '002', '003', '7'] (the width of a zero-padded start kept)."""
    items = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        if not last:
            items.append(first)
            continue
        if not (first.isdigit() and last.isdigit()) or int(last) < int(first):
            raise GpureproError(f"bad range '{part}' in a hostlist: use start-end, e.g. 001-064")
        width = len(first) if first.startswith("0") else 0
        items += [f"{i:0{width}d}" for i in range(int(first), int(last) + 1)]
    return items


def _split_top(hostlist: str) -> list[str]:
    """Split at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for char in hostlist:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def expand_hostlist(hostlist: str) -> list[str]:
    """SLURM's hostlist syntax to node names, in order: `node[01-03],gpu7` -> node01, node02, node03,
    gpu7; several brackets in one name multiply (`r[1-2]n[1-2]` -> r1n1, r1n2, r2n1, r2n2)."""
    names = []
    for part in _split_top(hostlist.strip()):
        part = part.strip()
        if not part:
            continue
        if part.count("[") != part.count("]"):
            raise GpureproError(f"unbalanced brackets in hostlist '{hostlist}'")
        pieces = BRACKET.split(part)  # literal, range, literal, range, ..., literal
        choices = [[piece] if i % 2 == 0 else _ranges(piece) for i, piece in enumerate(pieces)]
        names += ["".join(combo) for combo in itertools.product(*choices)]
    return list(dict.fromkeys(names))


def slurm_here() -> bool:
    return shutil.which("sinfo") is not None


def _sinfo(*args: str) -> list[list[str]]:
    found = subprocess.run(["sinfo", "--noheader", "--Node", *args], capture_output=True, text=True,
                           timeout=SINFO_TIMEOUT_S)  # fmt: skip
    if found.returncode != 0:
        raise GpureproError(f"sinfo {' '.join(args)} failed: {found.stderr.strip()}")
    return [line.split("|") for line in found.stdout.splitlines() if line.strip()]


def node_states(nodes: list[str]) -> dict[str, tuple[str, str]]:
    """Each node's sinfo state and reason; a node sinfo does not know reads ('unknown', 'not in SLURM')."""
    states = {node: ("unknown", "not known to SLURM (sinfo does not list it)") for node in nodes}
    if nodes:
        # every node sinfo knows, then ours: asked by name, one unknown name fails the whole query
        for name, state, reason in _sinfo("--format", "%N|%T|%E"):
            if name in states:
                states[name] = (state.lower(), reason if reason != "none" else "")
    return states


def partition_nodes(partition: str, count: int) -> list[str]:
    """The first `count` nodes of a partition in name order, those SLURM would run a job on first."""
    rows = _sinfo("--partition", partition, "--format", "%N|%T|%E")
    if not rows:
        raise GpureproError(f"campaign.partition '{partition}': sinfo lists no node in it")
    states = {name: state.lower() for name, state, _ in rows}
    ordered = sorted(states, key=lambda node: (bool(UNAVAILABLE.match(states[node])), node))
    return sorted(ordered[:count])


@dataclass
class Plan:
    """Per node, the attempt this run builds: measured ones are done, unavailable ones are recorded as
    such (with sinfo's state and reason), the rest are measured."""

    attempts: dict[str, int] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # node -> why
    to_measure: list[str] = field(default_factory=list)


def plan(raw: Path | str, nodes: list[str], states: dict[str, tuple[str, str]] | None) -> Plan:
    """What this run does for each node; `states` from node_states, None where there is no SLURM."""
    found = Plan()
    for node in nodes:
        attempt = layout.planned_attempt(raw, node)
        found.attempts[node] = attempt
        tries = layout.attempts(raw, node)
        if any(t.number == attempt and t.status == "measured" for t in tries):
            found.done.append(node)
            continue
        state, reason = (states or {}).get(node, ("", ""))
        if states is not None and UNAVAILABLE.match(state):
            found.unavailable[node] = f"SLURM state {state}" + (f": {reason}" if reason else "")
        else:
            found.to_measure.append(node)
    return found


def announced(records: list[str], text: str) -> list[str]:
    """`records`, having printed `text` (the campaign's estimate) the first time it is asked for."""
    if text and text not in _ANNOUNCED:
        _ANNOUNCED.add(text)
        print(text, file=sys.stderr)
    return records


_ANNOUNCED: set[str] = set()


def node_pattern(nodes: list[str] | dict[str, str]) -> str:
    """A wildcard constraint matching exactly these node names (none: a pattern nothing matches)."""
    return "|".join(re.escape(node) for node in nodes) or "(?!)"


def select_nodes(hostlists: list[str], partition: str, count: int) -> list[str]:
    """The campaign's nodes: the hostlists' nodes, or `count` nodes of the partition."""
    if hostlists:
        return list(dict.fromkeys(n for spec in hostlists for n in expand_hostlist(spec)))
    if partition:
        if not slurm_here():
            raise GpureproError("campaign.partition needs SLURM's sinfo; name the nodes (campaign.nodes)")
        return partition_nodes(partition, count)
    return []
