"""More processes where a claim needs them: after a study's rounds, the points an inconclusive claim reads
get another process each round (the noisier side first) until the claim resolves or a cap is spent.

points.py maps a claim's table rows to the study's raw points; plan.py picks the next round's points.
The workflow runs the rounds through Snakemake checkpoints (workflow/rules/more_processes.smk)."""

from .plan import Budget, next_round, read_plan
from .points import Point, claim_points

__all__ = ["Budget", "Point", "claim_points", "next_round", "read_plan"]
