"""The exact command lines a job runs under in each engine: pure functions, so tests pin them down.

Docker: only the job's own GPUs are passed (--gpus), the repository is mounted at its own path and is the
working directory, files are written as the host user (-u uid:gid) so results are not owned by root,
--ipc=host because PyTorch's DataLoader workers share tensors through /dev/shm (64 MB in Docker by
default), no network (measuring jobs download nothing), never --privileged, and capabilities only where
a caller names one. Apptainer: --nv, the repository bound at its own path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GpureproError

NETWORKS = ("none", "host")
# Inside the container the host user has no home directory and may have no /etc/passwd entry: HOME and
# the caches torch, matplotlib and Triton write go to the container's own /tmp, and USER names the user
# for the libraries that ask (torch.compile's cache directory does).
CONTAINER_HOME = "/tmp/gpurepro-home"
_CAPABILITY = re.compile(r"^[A-Z_]+$")


@dataclass(frozen=True)
class Bind:
    """A host path mounted at the same path inside the container, read-only or not."""

    path: Path
    read_only: bool = False

    @classmethod
    def parse(cls, text: str) -> Bind:
        """PATH or PATH:ro (relative paths are taken from the working directory)."""
        path, _, mode = text.partition(":")
        if mode not in ("", "ro", "rw"):
            raise GpureproError(f"bind '{text}': the mode after ':' must be ro or rw, not '{mode}'")
        return cls(Path(path).resolve(), mode == "ro")


@dataclass(frozen=True)
class JobSpec:
    """Everything about a containerised job except the engine: what runs, where, with which GPUs."""

    image: str
    command: Sequence[str]
    repo: Path
    gpus: Sequence[int] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    binds: Sequence[Bind] = ()

    def __post_init__(self) -> None:
        if not self.command:
            raise GpureproError("no command to run in the container (put it after --)")
        if not self.repo.is_absolute():
            raise GpureproError(f"the repository path must be absolute, got {self.repo}")


def gpu_request(gpus: Sequence[int]) -> str:
    """The value of `docker run --gpus` for these GPU indices. The quotes are part of the value: without
    them Docker splits `device=0,1` at the comma and rejects the second half."""
    return f'"device={",".join(str(g) for g in gpus)}"'


def docker_run(
    spec: JobSpec,
    *,
    uid: int,
    gid: int,
    user: str,
    network: str = "none",
    cap_add: Sequence[str] = (),
) -> list[str]:
    """`docker run` for one job: removed when done, the image by id (never pulled)."""
    if network not in NETWORKS:
        raise GpureproError(f"network '{network}' is not one of {list(NETWORKS)}")
    for cap in cap_add:
        if not _CAPABILITY.match(cap):
            raise GpureproError(f"capability '{cap}' is not a capability name such as SYS_ADMIN")
    argv = ["docker", "run", "--rm", "--init", "--pull", "never", "--network", network, "--ipc", "host"]
    if spec.gpus:
        argv += ["--gpus", gpu_request(spec.gpus)]
    for cap in cap_add:
        argv += ["--cap-add", cap]
    argv += ["--user", f"{uid}:{gid}"]
    argv += ["--volume", f"{spec.repo}:{spec.repo}", "--workdir", str(spec.repo)]
    for bind in spec.binds:
        argv += ["--volume", f"{bind.path}:{bind.path}{':ro' if bind.read_only else ''}"]
    env = {
        "HOME": CONTAINER_HOME,
        "USER": user,
        "LOGNAME": user,
        "XDG_CACHE_HOME": f"{CONTAINER_HOME}/.cache",
        "MPLCONFIGDIR": f"{CONTAINER_HOME}/.config/matplotlib",
        **spec.env,
    }
    for name, value in env.items():
        argv += ["--env", f"{name}={value}"]
    return [*argv, spec.image, *spec.command]


def apptainer_exec(spec: JobSpec, *, binary: str = "apptainer") -> list[str]:
    """`apptainer exec` for one job. --nv makes the host's NVIDIA driver and GPUs visible with the host's
    numbering (a scheduler's cgroup, not Apptainer, keeps a job to its own GPUs), so the job names its
    GPU by its host index as it would without a container."""
    argv = [binary, "exec"]
    if spec.gpus:
        argv.append("--nv")
    argv += ["--bind", str(spec.repo), "--pwd", str(spec.repo)]
    for bind in spec.binds:
        argv += ["--bind", f"{bind.path}{':ro' if bind.read_only else ''}"]
    for name, value in spec.env.items():
        argv += ["--env", f"{name}={value}"]
    return [*argv, spec.image, *spec.command]
