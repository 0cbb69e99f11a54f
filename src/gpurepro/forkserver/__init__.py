"""One process that has imported Python, torch and the project once, from which every job of a local run
starts by fork: a job's start-up costs a fork instead of an interpreter and seconds of imports.

Why not one long-lived process per GPU that runs every point in turn: a point's idle baseline is the
GPU's power with no CUDA context on it, so every point still needs a process of its own, which makes its
context and leaves with it. The server never touches CUDA or NVML (both must be set up after a fork), so
each forked job is as fresh on the GPU as a new interpreter, and keeps what one process per job gives:
its own exit status (a failed point is recorded and the rest go on), its own raw files and provenance,
its own environment (the `gpu_<index>` pinning, the MPS pipe directory), its own working folder.

- `server`: preloads the libraries and forks a job per request (`python -m gpurepro.forkserver.server`).
- `client`: runs an entry point through the server named by $GPUREPRO_FORKSERVER, or in this process
  when there is none (each CLI works alone, as before).
- `lifecycle`: starts the server for a Snakemake run and stops it at the run's end.
- `protocol`: the messages between them, and the file descriptors passed along.
"""
