"""Where each job runs: which GPU of the node measures each point (docs/design.md, "claim-affine
placement"), and the one object the workflow's rules ask.

- `groups`: the claim groups, the points one claim compares, which share a GPU within a round; on a
  cluster, the Snakemake job groups that run them in one allocation.
- `packing`: the groups of each round packed onto the selected GPUs, longest first, and the record of
  it the run keeps (`<results>/placement.json`).
- `host_share`: the kinds of point that keep the host to themselves when GPUs measure side by side.
- `placer`: the `Placer` every rule asks for its jobs' GPU, resources, threads, torch threads, container
  prefix and cluster group, on this machine and on a cluster alike.
"""
