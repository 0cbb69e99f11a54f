"""Which container engine a run uses: `container.engine` in the config, with `auto` resolved here.

Docker is asked through its Python SDK (a ping, then the engine's info for the NVIDIA runtime), so no
`docker` CLI output is parsed. Apptainer has no daemon: it is found by its binary.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

from ..errors import GpureproError

ENGINES = ("auto", "docker", "apptainer", "none")
# A ping to an engine that is not there fails at once (no socket); one that hangs must not stall planning.
PING_TIMEOUT_S = 10


@dataclass(frozen=True)
class DockerProbe:
    """What a Docker engine here said: whether it answered, its version, whether it has the NVIDIA runtime."""

    answers: bool
    nvidia_runtime: bool = False
    version: str | None = None
    runtimes: tuple[str, ...] = ()
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "answers": self.answers,
            "nvidia_runtime": self.nvidia_runtime,
            "version": self.version,
            "runtimes": list(self.runtimes),
            "reason": self.reason,
        }


def docker_client(timeout: int = PING_TIMEOUT_S) -> Any:
    """A Docker SDK client for the engine named by DOCKER_HOST (default: the local socket)."""
    try:
        import docker
    except ImportError as err:
        raise GpureproError("the Docker SDK for Python is not installed: pip install docker") from err
    try:
        # version="auto": speak the engine's own API version, so older engines (e.g. Debian's) answer too.
        return docker.from_env(timeout=timeout, version="auto")
    except docker.errors.DockerException as err:
        raise GpureproError(f"no Docker engine answers here ({_first_line(err)})") from err


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def probe_docker(timeout: int = PING_TIMEOUT_S) -> DockerProbe:
    """Ping the Docker engine and read its runtimes; never raises (a missing engine is an answer)."""
    try:
        client = docker_client(timeout)
    except GpureproError as err:
        return DockerProbe(answers=False, reason=str(err))
    try:
        client.ping()
        info = client.info()
        version = client.version().get("Version")
    except Exception as err:  # the SDK raises requests' and its own errors alike: all mean "no answer"
        return DockerProbe(answers=False, reason=f"the Docker engine does not answer ({_first_line(err)})")
    finally:
        client.close()
    runtimes = tuple(sorted(info.get("Runtimes") or {}))
    return DockerProbe(answers=True, nvidia_runtime="nvidia" in runtimes, version=version, runtimes=runtimes)


def apptainer_binary() -> str | None:
    """The Apptainer (or its predecessor Singularity) binary on PATH, if any."""
    return shutil.which("apptainer") or shutil.which("singularity")


def resolve_engine(
    requested: str, *, gpu_jobs: bool, cluster: bool, sdm_apptainer: bool, probe: DockerProbe | None = None
) -> str:
    """The engine GPU jobs run under: docker, apptainer or none.

    auto: apptainer when Snakemake runs rules in Apptainer (--sdm apptainer); otherwise docker when an
    engine answers and has the NVIDIA runtime, and not on a cluster (the engine would be asked on the
    submit host, not on the nodes); otherwise none. An explicit choice that cannot work here is an
    error naming what is missing.
    """
    if requested not in ENGINES:
        raise GpureproError(f"container.engine: '{requested}' is not one of {list(ENGINES)}")
    if requested == "none":
        return "none"
    if requested == "docker" and sdm_apptainer:
        raise GpureproError(
            "container.engine=docker with --sdm apptainer: each job would run in Apptainer and in Docker; "
            "drop --sdm apptainer, or choose container.engine=apptainer"
        )
    if requested == "apptainer" or (requested == "auto" and sdm_apptainer):
        if not sdm_apptainer:
            raise GpureproError(
                "container.engine=apptainer: Snakemake runs rules in Apptainer only with "
                "--sdm apptainer (profiles/slurm sets it); add it, or choose docker or none"
            )
        return "apptainer"
    if cluster:
        if requested == "docker":
            raise GpureproError(
                "container.engine=docker with cluster.enabled: jobs run on the compute nodes, where a "
                "Docker engine cannot be asked from here; use container.engine=apptainer (--sdm apptainer)"
            )
        return "none"
    probe = probe or probe_docker()
    if requested == "auto":
        # Only where GPU jobs could use it: an engine without the NVIDIA runtime is not picked unasked,
        # not even for the cpu profile, whose jobs need no image.
        return "docker" if probe.answers and probe.nvidia_runtime else "none"
    if not probe.answers:
        raise GpureproError(
            f"container.engine=docker: {probe.reason}. Start the engine (or set DOCKER_HOST), "
            "or choose container.engine=none to run on the host"
        )
    if gpu_jobs and not probe.nvidia_runtime:
        raise GpureproError(
            "container.engine=docker: the Docker engine has no 'nvidia' runtime (it has "
            f"{list(probe.runtimes)}), so GPU jobs could not see a GPU; install the NVIDIA Container "
            "Toolkit (nvidia-ctk runtime configure --runtime=docker), or choose container.engine=none"
        )
    return "docker"
