"""What a campaign will cost, said before it is submitted: node-hours, GPU-hours, and the wall time at
the number of node jobs the profile lets run at once."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    nodes: int
    gpus_per_node: int
    runs: int
    run_minutes: float  # one run of every GPU of a node at once, its cool-down included
    parallel: int  # node jobs at once

    @property
    def node_hours(self) -> float:
        return self.nodes * self.runs * self.run_minutes / 60

    @property
    def gpu_hours(self) -> float:
        return self.node_hours * self.gpus_per_node

    @property
    def wall_hours(self) -> float:
        """With every node free: waves of `parallel` node jobs (a queue makes it longer, never shorter)."""
        return math.ceil(self.nodes / self.parallel) * self.runs * self.run_minutes / 60

    def describe(self) -> str:
        return (
            f"campaign: {self.nodes} node(s) x {self.gpus_per_node} GPU(s), {self.runs} run(s) of about "
            f"{self.run_minutes:g} min per node: {self.node_hours:.1f} node-hours, {self.gpu_hours:.1f} "
            f"GPU-hours; at {self.parallel} node jobs at once about {self.wall_hours:.1f} h of wall time "
            "once the nodes are free"
        )


def estimate(nodes: int, gpus_per_node: int, runs: int, run_minutes: float, parallel: int) -> Estimate:
    return Estimate(nodes, gpus_per_node, runs, run_minutes, parallel)
