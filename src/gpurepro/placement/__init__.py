"""Which GPU of the node measures each point (docs/design.md, "claim-affine placement").

- `groups`: the claim groups, the points one claim compares, which share a GPU within a round. The one
  source of truth for every placement (local now; the cluster's groups of jobs later).
- `packing`: the groups of each round packed onto the selected GPUs, longest first, and the record of
  it the run keeps (`<results>/placement.json`).
"""
