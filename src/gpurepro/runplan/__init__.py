"""How long the jobs Snakemake planned will take, said before they start.

- `jobs`: the planned jobs as plain records (rule, wildcards, threads, resources, benchmark file,
  dependencies), taken from Snakemake's DAG by the workflow, so nothing here imports Snakemake.
- `durations`: each job's seconds, from this device's earlier benchmark files where they exist, else from
  its study's model (the phases every measuring job goes through, with the run's settings).
- `schedule`: the wall time of those jobs run as Snakemake runs them (cores, one measurement per GPU).
- `estimate`: the line the run prints.
"""
