"""A job's command run in the project's image (`gpurepro container exec`): the engine's command line
(argv.py) for the job's GPUs, the repository and binds, with the environment the job needs inside, and
this process replaced by it. With engine none the command runs on the host as it is."""

from __future__ import annotations

import getpass
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import GpureproError
from . import argv as container_argv
from .build import inspect_image
from .engine import apptainer_binary


@dataclass(frozen=True)
class ExecRequest:
    """What a job asked for (the command's options)."""

    engine: str  # docker, apptainer or none
    command: Sequence[str]
    image: str | None  # docker: id or tag; apptainer: SIF file or URI
    image_id_file: Path | None  # a file holding the image id, where no image is named
    gpus: str  # host GPU indices, e.g. "0,1"; "" or "cpu": none
    repo: Path | None  # mounted and working directory (default: the working directory)
    binds: Sequence[str]  # further host paths, PATH[:ro]
    network: str  # docker: network mode
    cap_add: Sequence[str]  # docker: Linux capabilities the tool needs
    dry_run: bool  # print the command line, run nothing


def parse_gpus(text: str) -> list[int]:
    """'0,1' -> [0, 1]; '' and 'cpu' (a job of the cpu profile) -> []."""
    if text.strip() in ("", "cpu"):
        return []
    try:
        gpus = [int(part) for part in text.split(",")]
    except ValueError:
        raise GpureproError(f"--gpus '{text}': expected GPU indices such as 0 or 0,1, or 'cpu'") from None
    if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise GpureproError(f"--gpus '{text}': GPU indices must be distinct and not negative")
    return gpus


def _image_reference(request: ExecRequest) -> str:
    if request.image:
        return request.image
    if request.image_id_file is None:
        raise GpureproError(f"container exec --engine {request.engine} needs --image-id-file or --image")
    try:
        reference = request.image_id_file.read_text().strip()
    except OSError as err:
        raise GpureproError(f"cannot read the image id from {request.image_id_file}: {err}") from err
    if not reference:
        raise GpureproError(f"{request.image_id_file} is empty: rebuild the image (snakemake build_image)")
    return reference


def forwarded_env() -> dict[str, str]:
    """The workflow's settings for jobs (GPUREPRO_* variables: config hash, device check, ...), which a
    container does not inherit from the host as a child process would."""
    return {name: value for name, value in os.environ.items() if name.startswith("GPUREPRO_")}


def exec_command(request: ExecRequest) -> tuple[list[str], dict[str, str]]:
    """The command line `container exec` runs, and the environment it runs with."""
    command = list(request.command)
    if not command:
        raise GpureproError("container exec: no command given (put it after --)")
    env = dict(os.environ)
    if request.engine == "none":
        env.pop("GPUREPRO_IMAGE_ID", None)
        return command, {**env, "GPUREPRO_CONTAINER_ENGINE": "none"}
    repo = (request.repo or Path.cwd()).resolve()
    reference = _image_reference(request)
    job_env = {**forwarded_env(), "GPUREPRO_CONTAINER_ENGINE": request.engine}
    # The checkout's code runs, not the copy installed in the image: the git commit in the provenance is
    # then the code that measured, and editing the code needs no image rebuild.
    job_env["PYTHONPATH"] = str(repo / "src")
    spec_args = {
        "command": command,
        "repo": repo,
        "gpus": parse_gpus(request.gpus),
        "binds": [container_argv.Bind.parse(text) for text in request.binds],
    }
    if request.engine == "docker":
        image_id = reference if request.dry_run else inspect_image(reference).id
        spec = container_argv.JobSpec(
            image=image_id, env={**job_env, "GPUREPRO_IMAGE_ID": image_id}, **spec_args
        )
        argv = container_argv.docker_run(
            spec,
            uid=os.getuid(),
            gid=os.getgid(),
            user=getpass.getuser(),
            network=request.network,
            cap_add=request.cap_add,
        )
        return argv, env
    binary = apptainer_binary()
    if binary is None and not request.dry_run:
        raise GpureproError("container exec --engine apptainer: apptainer (or singularity) is not on PATH")
    spec = container_argv.JobSpec(
        image=reference, env={**job_env, "GPUREPRO_IMAGE_ID": reference}, **spec_args
    )
    return container_argv.apptainer_exec(spec, binary=binary or "apptainer"), env


def exec_job(request: ExecRequest) -> int:
    """Print the command line (dry run), or replace this process with it: the engine's CLI (or the
    command itself) then gets Snakemake's signals, and its exit status is the job's."""
    argv, env = exec_command(request)
    if request.dry_run:
        print(shlex.join(argv))
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(argv[0], argv, env)
    except FileNotFoundError as err:
        raise GpureproError(f"container exec: {argv[0]} not found on PATH") from err
    return 1  # not reached
