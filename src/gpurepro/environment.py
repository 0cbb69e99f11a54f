"""Every GPUREPRO_* environment variable, in one place: what sets it, what reads it, and why it is no
argument.

Settings reach a job as its command's arguments; a few come through the environment instead, each for
a reason given below (most often: a value that must not make Snakemake rerun a finished measurement, as
a changed command line or param would). tests/test_environment.py fails when the code reads or sets a
GPUREPRO_* name this table does not list, and when docs/environment.md's table is not the one
`python -m gpurepro.environment` prints from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    """One variable: who sets it (and where), and why it is no argument of the job's command."""

    set_by: str
    why: str


VARIABLES: Mapping[str, Variable] = {
    "GPUREPRO_CONFIG_HASH": Variable(
        "the workflow (workflow/rules/common.smk)",
        "the config's hash, recorded in each raw file's provenance; an argument would rerun every finished "
        "point when an unrelated key changes",
    ),
    "GPUREPRO_DEVICE_CHECK": Variable(
        "the workflow (workflow/rules/common.smk)",
        "config device_check, error or warn when the GPU is not the profile's model; changing it must not "
        "rerun finished points",
    ),
    "GPUREPRO_DCGM_OUT": Variable(
        "the user, before running snakemake (the workflow's default: auto)",
        "off turns DCGM sampling off: DCGM is not a rule output, and turning it on or off must not rerun "
        "finished points",
    ),
    "GPUREPRO_DEVICES_DIR": Variable(
        "the user",
        "where device profiles live, for a command run outside the checkout",
    ),
    "GPUREPRO_SLICE_GPUS": Variable(
        "the workflow under claim-group placement (gpurepro/placement/placer.py)",
        "the GPUs whose jobs run side by side, whose CPU slices a job pins to (host.py); the same point "
        "keeps its command wherever it is placed",
    ),
    "GPUREPRO_PINNED_CPUS": Variable(
        "a pinned job, for the processes it starts (host.py)",
        "the CPUs they inherit",
    ),
    "GPUREPRO_FORKSERVER": Variable(
        "the workflow's fork server (forkserver/lifecycle.py)",
        "where jobs ask it to start them; a job started without it starts its own interpreter",
    ),
    "GPUREPRO_FORKED_FROM": Variable(
        "the fork server, in each process it starts (forkserver/protocol.py)",
        "recorded in provenance",
    ),
    "GPUREPRO_CONTAINER_ENGINE": Variable(
        "a job run in a container (containers/job.py, workflow/rules/containers.smk)",
        "the engine, recorded in provenance",
    ),
    "GPUREPRO_IMAGE_ID": Variable(
        "a job run in a container (containers/job.py, workflow/rules/containers.smk)",
        "the image, recorded in provenance",
    ),
    "GPUREPRO_NODE_JOB": Variable(
        "a variability node job, in each GPU's process (provenance.py)",
        "the job's start and its GPUs, recorded in provenance",
    ),
    "GPUREPRO_TRAIN_FAILURE_DIR": Variable(
        "a training job, for its ranks (training/failures.py)",
        "where a failing rank writes why",
    ),
}


def markdown_table() -> str:
    """The variables as the Markdown table docs/environment.md shows."""
    rows = ["| variable | set by | why not an argument |", "|---|---|---|"]
    rows += [f"| `{name}` | {v.set_by} | {v.why} |" for name, v in VARIABLES.items()]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
