"""Every GPUREPRO_* environment variable, in one place: what sets it and what reads it.

Settings reach a job as its command's arguments; a few come through the environment instead, each for
a reason given below (most often: a value that must not make Snakemake rerun a finished measurement, as
a changed command line or param would). tests/test_environment.py fails when the code reads or sets a
GPUREPRO_* name this table does not list.
"""

from __future__ import annotations

from collections.abc import Mapping

# name -> who sets it, and why it is no argument
VARIABLES: Mapping[str, str] = {
    "GPUREPRO_CONFIG_HASH": "the workflow (common.smk): the config's hash, recorded in each raw file's "
    "provenance; an argument would rerun every finished point when an unrelated key changes",
    "GPUREPRO_DEVICE_CHECK": "the workflow (common.smk): config device_check, error or warn when the GPU is "
    "not the profile's model; changing it must not rerun finished points",
    "GPUREPRO_DCGM_OUT": "the user, before running snakemake (default auto; off turns DCGM sampling off): "
    "DCGM is not a rule output, and turning it on or off must not rerun finished points",
    "GPUREPRO_DEVICES_DIR": "the user: where device profiles live, for a command run outside the checkout",
    "GPUREPRO_SLICE_GPUS": "the workflow under claim-group placement (common.smk): the GPUs whose jobs run "
    "side by side, whose CPU slices a job pins to (host.py)",
    "GPUREPRO_PINNED_CPUS": "a pinned job, for the processes it starts (host.py): the CPUs they inherit",
    "GPUREPRO_FORKSERVER": "the workflow's fork server (forkserver/lifecycle.py): where jobs ask it to "
    "start them",
    "GPUREPRO_FORKED_FROM": "the fork server, in each process it starts (forkserver/protocol.py), recorded "
    "in provenance",
    "GPUREPRO_CONTAINER_ENGINE": "a job run in a container (containers/job.py, containers.smk): the engine, "
    "recorded in provenance",
    "GPUREPRO_IMAGE_ID": "a job run in a container (containers/job.py, containers.smk): the image, recorded "
    "in provenance",
    "GPUREPRO_NODE_JOB": "a variability node job, in each GPU's process (provenance.py): the job's start "
    "and its GPUs, recorded in provenance",
    "GPUREPRO_TRAIN_FAILURE_DIR": "a training job, for its ranks (training/failures.py): where a failing "
    "rank writes why",
}
