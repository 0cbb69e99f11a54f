"""What a Snakemake run of the workflow checks and says around its jobs: the GPUs at start, an interrupted
or killed run, and the verdict it ends on. The Snakefile's handlers call these; the logic is here, where
it is unit-tested."""
