"""`gpurepro container ...`: the project's container image and the engines GPU jobs run in.

gpurepro container detect [--json]
gpurepro container build [--engine docker] --tag gpurepro:latest --base-image IMAGE --id-file F
gpurepro container build --engine apptainer --out build/container/gpurepro.sif [--source gpurepro:latest]
gpurepro container exec --engine docker --image-id-file F --gpus 0,1 -- COMMAND ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..containers import argv as container_argv
from ..containers.detect import detect_engines
from ..containers.image import ImageBuild, build
from ..containers.job import ExecRequest, exec_job
from ..errors import GpureproError
from ..profiles import project_root


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "container",
        help="detect the container engine, build the project's image, run a command in it",
        description="The project's image (containers/Dockerfile) and the engines GPU jobs run in. The "
        "workflow builds the image (rule build_image) and wraps each GPU job in `container exec` when "
        "config container.engine resolves to docker.",
    )
    commands = parser.add_subparsers(dest="container_command", metavar="CONTAINER_COMMAND", required=True)

    detect = commands.add_parser("detect", help="which engines answer here and what engine=auto picks")
    detect.add_argument("--json", action="store_true", help="print JSON instead of text")
    detect.set_defaults(func=run_detect)

    make = commands.add_parser(
        "build",
        help="build the project's image (Docker, through its SDK; or an Apptainer SIF)",
        description="docker: build containers/Dockerfile with the repository as context, progress "
        "streamed here, and write the image id to --id-file. apptainer: build a SIF from "
        "containers/gpurepro.def, which starts from the Docker image.",
    )
    make.add_argument("--engine", choices=["docker", "apptainer"], default="docker")
    make.add_argument("--repo", type=Path, default=None, help="the repository (default: this checkout)")
    make.add_argument("--tag", default="gpurepro:latest", help="docker: the tag the image gets")
    make.add_argument("--base-image", help="docker: BASE_IMAGE build argument (default: the Dockerfile's)")
    make.add_argument(
        "--build-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another build argument (repeatable), e.g. NVIDIA_TOOLS=false",
    )
    make.add_argument(
        "--ca-bundle",
        default="auto",
        help="CA bundle pip trusts inside the build: a file, 'auto' (the one pip trusts here: PIP_CERT, "
        "pip's config, REQUESTS_CA_BUNDLE, SSL_CERT_FILE), or 'none'",
    )
    make.add_argument(
        "--network",
        choices=["default", "host"],
        default="host",
        help="docker: network of the build's steps (host works where the engine has no bridge network)",
    )
    make.add_argument("--id-file", type=Path, help="docker: write the image id here")
    make.add_argument("--out", type=Path, help="apptainer: the SIF file to write")
    make.add_argument(
        "--source",
        default="docker-daemon://gpurepro:latest",
        help="apptainer: the image the SIF starts from: docker-daemon://TAG (this machine's Docker), "
        "docker-archive://FILE.tar (a `docker save` archive) or docker://REGISTRY/IMAGE:TAG",
    )
    make.set_defaults(func=run_build)

    execute = commands.add_parser(
        "exec",
        help="run a command inside the project's image with the job's GPUs (or on the host: engine none)",
        description="docker: `docker run` with only the given GPUs, the repository mounted at its own "
        "path, the host user's uid/gid, --ipc=host, no network, never --privileged. apptainer: "
        "`apptainer exec --nv`. none: run the command directly. The job's provenance records the "
        "engine and image id.",
    )
    execute.add_argument("--engine", choices=["docker", "apptainer", "none"], required=True)
    image = execute.add_mutually_exclusive_group()
    image.add_argument("--image-id-file", type=Path, help="file holding the image id (from build)")
    image.add_argument("--image", help="image reference (docker: id or tag; apptainer: SIF file or URI)")
    execute.add_argument(
        "--gpus", default="", help="host GPU indices the job gets, e.g. 0 or 0,1; empty or 'cpu': none"
    )
    execute.add_argument("--repo", type=Path, default=None, help="mounted and working directory (default: .)")
    execute.add_argument(
        "--bind",
        action="append",
        default=[],
        metavar="PATH[:ro]",
        help="another host path to mount at the same path (repeatable), e.g. a data folder",
    )
    execute.add_argument(
        "--network", choices=list(container_argv.NETWORKS), default="none", help="docker: network mode"
    )
    execute.add_argument(
        "--cap-add",
        action="append",
        default=[],
        metavar="CAP",
        help="docker: a Linux capability the tool needs (repeatable), e.g. SYS_ADMIN for DCGM's "
        "profiling metrics",
    )
    execute.add_argument("--dry-run", action="store_true", help="print the command line, run nothing")
    execute.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    execute.set_defaults(func=run_exec)


def run_detect(args: argparse.Namespace) -> int:
    report = detect_engines()
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print("\n".join(report.lines()))
    return 0


def _build_args(pairs: list[str]) -> dict[str, str]:
    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise GpureproError(f"--build-arg '{pair}': expected NAME=VALUE")
        parsed[name] = value
    return parsed


def run_build(args: argparse.Namespace) -> int:
    request = ImageBuild(
        engine=args.engine,
        repo=(args.repo or project_root()).resolve(),
        build_args=_build_args(args.build_arg),
        tag=args.tag,
        base_image=args.base_image,
        ca_bundle=args.ca_bundle,
        network=args.network,
        id_file=args.id_file,
        out=args.out,
        source=args.source,
    )
    return build(request)


def exec_request(args: argparse.Namespace) -> ExecRequest:
    """The job's request from its options; the command is what follows `--`."""
    return ExecRequest(
        engine=args.engine,
        command=args.command[1:] if args.command[:1] == ["--"] else args.command,
        image=args.image,
        image_id_file=args.image_id_file,
        gpus=args.gpus,
        repo=args.repo,
        binds=args.bind,
        network=args.network,
        cap_add=args.cap_add,
        dry_run=args.dry_run,
    )


def run_exec(args: argparse.Namespace) -> int:
    return exec_job(exec_request(args))
