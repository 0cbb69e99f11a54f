"""Which measuring points keep the host to themselves when the node's GPUs measure side by side.

With `placement: claim_groups` each selected GPU's jobs run beside the other GPUs' jobs. A GPU-bound
point's figure is set by its own GPU; a host-paced one (eager inference at small batches, serial and
stock HFTA steps at small B: rounds.py) by how fast one Python thread queues kernels, which busy
neighbours on the same CPUs, memory bus and caches may slow. Each GPU's jobs are pinned to a CPU slice of
their own (host.cpu_slice), and the kinds of point listed in the config's `host_to_itself` take every
core instead: Snakemake then runs nothing beside them, as it runs nothing beside any inference point on
one GPU. Which kinds need that is what benchmarks/isolation.py measures (docs/runtime.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from .. import registry

# The kinds a measuring point of the placed studies is; config `host_to_itself` lists some of them.
KINDS = registry.KINDS


def kind_of(rule: str, wildcards: Mapping[str, Any]) -> str | None:
    """The kind of a measuring job (one of KINDS), None for a rule that measures no placed point."""
    found = registry.record(rule)
    return None if found is None else found.point_kind(wildcards)


def takes_the_host(rule: str, wildcards: Mapping[str, Any], host_to_itself: AbstractSet[str]) -> bool:
    """Whether a job of `rule` takes every core (nothing runs beside it) under claim-group placement."""
    return kind_of(rule, wildcards) in host_to_itself
