"""Building the project's Docker image through the Docker SDK, with the build's output streamed to the log.

The build context is the repository filtered by its .dockerignore (only what the image copies), sent as
a tar archive we make ourselves so that a CA bundle can be added to it: where a site's network inspects
TLS, pip inside the build must trust the same certificates as pip on the host.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GpureproError
from .engine import docker_client

# Where the Dockerfile's pip step looks for an extra CA bundle (containers/Dockerfile copies it if present).
CA_BUNDLE_NAME = "build-ca.pem"
# The build may download packages (PyPI, NVIDIA's apt repositories) for a long while.
BUILD_TIMEOUT_S = 3 * 3600


@dataclass(frozen=True)
class BuiltImage:
    """An image in the engine: its content id, the tags it carries and its labels."""

    id: str
    tags: tuple[str, ...]
    labels: dict[str, str]


def dockerignore_patterns(root: Path) -> list[str]:
    """The patterns of root/.dockerignore (none when there is no such file), as Docker reads them."""
    path = root / ".dockerignore"
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def build_context(root: Path, dockerfile: str, ca_bundle: Path | None = None) -> io.BytesIO:
    """The build context as an uncompressed tar: the files .dockerignore lets through, plus the Dockerfile
    and the CA bundle (as CA_BUNDLE_NAME) when one is given."""
    from docker.utils.build import exclude_paths

    names = sorted(exclude_paths(str(root), dockerignore_patterns(root), dockerfile=dockerfile))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in names:
            tar.add(root / name, arcname=name, recursive=False)
        if ca_bundle is not None:
            if not ca_bundle.is_file():
                raise GpureproError(f"CA bundle {ca_bundle} does not exist")
            tar.add(ca_bundle, arcname=CA_BUNDLE_NAME, recursive=False)
    buffer.seek(0)
    return buffer


def _stream_text(chunk: Mapping[str, Any]) -> str:
    """The human-readable part of one message of the engine's build stream."""
    if "stream" in chunk:
        return str(chunk["stream"])
    if "status" in chunk:  # pulling a base image: status lines with layer progress
        progress = chunk.get("progress", "")
        return f"{chunk.get('id', '')} {chunk['status']} {progress}".strip() + "\n"
    return ""


def build_image(
    root: Path,
    *,
    dockerfile: str,
    tag: str,
    build_args: Mapping[str, str],
    ca_bundle: Path | None = None,
    network: str | None = None,
    progress: Callable[[str], None] = print,
) -> BuiltImage:
    """Build `dockerfile` (relative to root) with root as context, tag the image, and return it. The base
    image must be in the engine already or reachable; nothing else is pulled."""
    context = build_context(root, dockerfile, ca_bundle)
    client = docker_client(timeout=BUILD_TIMEOUT_S)
    try:
        image_id = None
        stream = client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=dockerfile,
            tag=tag,
            buildargs=dict(build_args),
            network_mode=network,
            rm=True,
            forcerm=True,
            decode=True,
        )
        for chunk in stream:
            if "error" in chunk:
                detail = str(chunk["error"]).strip()
                raise GpureproError(f"docker build of {dockerfile} failed: {detail}")
            text = _stream_text(chunk).rstrip("\n")
            if text:
                progress(text)
            aux = chunk.get("aux") or {}
            image_id = aux.get("ID", image_id)
        if image_id is None:
            raise GpureproError(f"docker build of {dockerfile} ended without an image id")
        return inspect_image(image_id, client)
    finally:
        client.close()


def inspect_image(reference: str, client: Any = None) -> BuiltImage:
    """An image by id or tag; a clear error when the engine does not have it."""
    import docker

    own = client is None
    client = client or docker_client()
    try:
        image = client.images.get(reference)
    except docker.errors.ImageNotFound as err:
        raise GpureproError(
            f"the Docker engine has no image {reference}; build it (snakemake build_image, or "
            "gpurepro container build) or load it (docker load -i gpurepro-image.tar)"
        ) from err
    finally:
        if own:
            client.close()
    return BuiltImage(id=image.id, tags=tuple(image.tags), labels=dict(image.labels or {}))
