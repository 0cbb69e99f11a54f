"""How the workflow wraps GPU jobs for the engine it resolved: the pieces workflow/rules/containers.smk
hands to the study rules (an input, a shell prefix, the GPU number a command names inside the job).

Inside a Docker job only the GPUs passed with --gpus exist, numbered from 0 in host order, as in a
cluster allocation; Apptainer and the host keep the host's numbering.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GpureproError

GpuSpec = int | str | Sequence[int]


def outside_binds(repo: Path, folders: Iterable[str], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Folders a job reads or writes that are not inside the (mounted) repository, as absolute paths,
    followed by the extra binds the config names."""
    binds = []
    for folder in folders:
        path = Path(folder)
        path = (path if path.is_absolute() else repo / path).resolve()
        if not path.is_relative_to(repo) and str(path) not in binds:
            binds.append(str(path))
    return (*binds, *extra)


@dataclass(frozen=True)
class ContainerPlan:
    """The resolved engine and what every containerised job shares."""

    engine: str
    repo: Path
    image_id_file: str
    gpu_jobs: bool
    selected_gpus: tuple[int, ...] = ()
    binds: tuple[str, ...] = ()

    @property
    def docker_gpu_jobs(self) -> bool:
        return self.engine == "docker" and self.gpu_jobs

    def job_input(self, wrap: Callable[[str], Any] = str) -> dict[str, Any]:
        """{'image': <image-id file>} under docker (so the image is built first), else nothing. `wrap` is
        Snakemake's ancient(): a rebuilt image does not make finished measurements outdated."""
        return {"image": wrap(self.image_id_file)} if self.engine == "docker" else {}

    def exec_prefix(self, gpus: GpuSpec = (), caps: Sequence[str] = ()) -> str:
        """The shell prefix that runs a job's command in the image with only `gpus` (host indices, a
        '{wildcards.gpu}' pattern, or 'cpu' / [] for none) passed; '' unless the engine is docker."""
        if self.engine != "docker":
            return ""
        if not isinstance(gpus, (int, str)):
            gpus = ",".join(str(g) for g in gpus)
        flags = [
            "--engine docker",
            f"--image-id-file {shlex.quote(self.image_id_file)}",
            f"--repo {shlex.quote(str(self.repo))}",
        ]
        if str(gpus) not in ("", "cpu"):
            flags.append(f"--gpus {gpus}")
        flags += [f"--cap-add {cap}" for cap in caps]
        flags += [f"--bind {shlex.quote(bind)}" for bind in self.binds]
        return f"gpurepro container exec {' '.join(flags)} -- "

    def exec_all_gpus_prefix(self, caps: Sequence[str] = ()) -> str:
        """exec_prefix for a job that drives every selected GPU. It names them by their host index, which
        inside a Docker container is right only when the selection is GPUs 0..n-1."""
        gpus = list(self.selected_gpus)
        if self.docker_gpu_jobs and gpus != list(range(len(gpus))):
            raise GpureproError(
                f"container.engine=docker: a job that uses every selected GPU sees them as "
                f"0..{len(gpus) - 1}, not as {gpus}: select gpus=all or GPUs 0..n-1, or use "
                "container.engine=none"
            )
        return self.exec_prefix(gpus, caps)

    def job_gpu(self, host_gpu: int | str) -> int | str:
        """The GPU a job's command names for the one GPU it is given: 0 inside Docker, else the host's."""
        return 0 if self.docker_gpu_jobs and host_gpu != "cpu" else host_gpu
