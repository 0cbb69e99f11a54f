"""The project's image as `gpurepro container build` makes it: with Docker, containers/Dockerfile built
through the SDK (build.py) and its id written where the workflow reads it; with Apptainer, a SIF from
containers/gpurepro.def, which starts from the Docker image."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import provenance
from ..errors import GpureproError
from ..results import write_derived
from .build import build_image
from .ca_bundle import chosen_ca_bundle
from .engine import apptainer_binary

DOCKERFILE = "containers/Dockerfile"
APPTAINER_DEFINITION = "containers/gpurepro.def"
# Where an Apptainer build may start from: this machine's Docker, a `docker save` archive, a registry.
APPTAINER_SOURCES = ("docker-daemon", "docker-archive", "docker")


@dataclass(frozen=True)
class ImageBuild:
    """What a build was asked for (the command's options); each engine reads its own."""

    engine: str  # docker or apptainer
    repo: Path  # the repository, absolute: the build context
    build_args: dict[str, str]  # further build arguments, NAME -> VALUE
    tag: str  # docker: the tag the image gets
    base_image: str | None  # docker: BASE_IMAGE, else the Dockerfile's
    ca_bundle: str  # docker: a file, 'auto' or 'none' (ca_bundle.py)
    network: str  # docker: network of the build's steps, 'default' or 'host'
    id_file: Path | None  # docker: where the image id goes
    out: Path | None  # apptainer: the SIF to write
    source: str  # apptainer: BOOTSTRAP://SOURCE the SIF starts from


def build(request: ImageBuild) -> int:
    """Build the image with the engine asked for; the exit status of the build."""
    if request.engine == "apptainer":
        return build_sif(request)
    build_docker_image(request)
    return 0


def build_docker_image(request: ImageBuild) -> None:
    """containers/Dockerfile with the repository as context, progress streamed here, the image id written
    to the id file; the git commit is a build argument, so the image says which code it holds."""
    if request.id_file is None:
        raise GpureproError("container build --engine docker needs --id-file (where the image id goes)")
    commit = provenance.git_state(request.repo)
    build_args = {"GIT_COMMIT": commit["commit"] or "unknown", **request.build_args}
    if request.base_image:
        build_args["BASE_IMAGE"] = request.base_image
    ca_bundle = chosen_ca_bundle(request.ca_bundle)
    print(
        f"Building {request.tag} from {DOCKERFILE} (build arguments {build_args}; CA bundle for pip: "
        f"{ca_bundle or 'pip default'}). On an NGC base this takes about 10-20 minutes the first time, "
        "mostly downloading; later builds reuse the engine's layer cache.",
        flush=True,
    )
    image = build_image(
        request.repo,
        dockerfile=DOCKERFILE,
        tag=request.tag,
        build_args=build_args,
        ca_bundle=ca_bundle,
        network=None if request.network == "default" else request.network,
        progress=lambda line: print(line, flush=True),
    )
    write_derived(request.id_file, image.id + "\n")
    print(f"Built {image.id} ({', '.join(image.tags)}); labels {image.labels}")
    print(f"Image id written to {request.id_file}")


def build_sif(request: ImageBuild) -> int:
    """`apptainer build` of containers/gpurepro.def from the source image; its exit status."""
    binary = apptainer_binary()
    if binary is None:
        raise GpureproError("container build --engine apptainer: apptainer (or singularity) is not on PATH")
    if request.out is None:
        raise GpureproError("container build --engine apptainer needs --out (the SIF file to write)")
    bootstrap, sep, source = request.source.partition("://")
    if not sep or bootstrap not in APPTAINER_SOURCES:
        raise GpureproError(
            f"--source {request.source}: expected docker-daemon://TAG, docker-archive://FILE or docker://IMAGE"
        )
    arguments = {"BOOTSTRAP": bootstrap, "SOURCE": source, **request.build_args}
    command = [binary, "build", "--force"]
    for name, value in arguments.items():
        command += ["--build-arg", f"{name}={value}"]
    command += [str(request.out), str(request.repo / APPTAINER_DEFINITION)]
    request.out.parent.mkdir(parents=True, exist_ok=True)
    print("Running:", " ".join(command), flush=True)
    return subprocess.run(command).returncode
