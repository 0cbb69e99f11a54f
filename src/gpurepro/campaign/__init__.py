"""The variability study over a cluster: a campaign measures every selected GPU of each node at once
(node.py), one exclusive job per node (workflow/rules/campaign.smk), and reads the cluster from the raw
files those jobs leave (layout.py) into per-GPU, per-node and cluster tables (tables.py) and figures
(plot.py). synthetic.py writes the same raw layout from a documented model, for clusters larger than
can be rented, and to time the aggregation (benchmarks/campaign_scale.py)."""
