"""`gpurepro container ...`: the project's container image and the engines GPU jobs run in.

gpurepro container detect [--json]
gpurepro container build [--engine docker] --tag gpurepro:latest --base-image IMAGE --id-file F
gpurepro container build --engine apptainer --out build/container/gpurepro.sif [--source gpurepro:latest]
gpurepro container exec --engine docker --image-id-file F --gpus 0,1 -- COMMAND ...
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from .. import provenance
from ..containers import argv as container_argv
from ..containers import build, engine
from ..errors import GpureproError
from ..profiles import project_root

DOCKERFILE = "containers/Dockerfile"
APPTAINER_DEFINITION = "containers/gpurepro.def"


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


# detect -------------------------------------------------------------------------------------------------


def run_detect(args: argparse.Namespace) -> int:
    probe = engine.probe_docker()
    apptainer = engine.apptainer_binary()
    picks = {
        kind: engine.resolve_engine(
            "auto", gpu_jobs=kind == "gpu", cluster=False, sdm_apptainer=False, probe=probe
        )
        for kind in ("gpu", "cpu")
    }
    if args.json:
        print(json.dumps({"docker": probe.as_dict(), "apptainer": apptainer, "auto": picks}, indent=2))
        return 0
    if probe.answers:
        runtime = "has the NVIDIA runtime" if probe.nvidia_runtime else "has no NVIDIA runtime"
        print(f"Docker: engine {probe.version} answers; {runtime} (runtimes: {', '.join(probe.runtimes)})")
    else:
        print(f"Docker: {probe.reason}")
    print(f"Apptainer: {apptainer or 'not found on PATH'}")
    print(
        f"container.engine=auto picks: {picks['gpu']} for a GPU profile, {picks['cpu']} for the cpu profile"
    )
    return 0


# build --------------------------------------------------------------------------------------------------


def _build_args(pairs: list[str]) -> dict[str, str]:
    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise GpureproError(f"--build-arg '{pair}': expected NAME=VALUE")
        parsed[name] = value
    return parsed


def host_ca_bundle() -> Path | None:
    """The CA bundle pip trusts on this machine: PIP_CERT, else pip's configured `cert`, else the bundle
    requests or OpenSSL are told to use; None when pip uses its own (certifi's)."""
    candidates = [os.environ.get("PIP_CERT")]
    configured = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.cert"], capture_output=True, text=True
    )
    candidates += [configured.stdout.strip() if configured.returncode == 0 else None]
    candidates += [os.environ.get("REQUESTS_CA_BUNDLE"), os.environ.get("SSL_CERT_FILE")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _ca_bundle(choice: str) -> Path | None:
    if choice == "none":
        return None
    if choice == "auto":
        return host_ca_bundle()
    path = Path(choice)
    if not path.is_file():
        raise GpureproError(f"--ca-bundle {choice}: no such file")
    return path


def run_build(args: argparse.Namespace) -> int:
    repo = (args.repo or project_root()).resolve()
    extra = _build_args(args.build_arg)
    if args.engine == "apptainer":
        return _build_apptainer(args, repo, extra)
    if args.id_file is None:
        raise GpureproError("container build --engine docker needs --id-file (where the image id goes)")
    commit = provenance.git_state(repo)
    build_args = {"GIT_COMMIT": commit["commit"] or "unknown", **extra}
    if args.base_image:
        build_args["BASE_IMAGE"] = args.base_image
    ca_bundle = _ca_bundle(args.ca_bundle)
    print(
        f"Building {args.tag} from {DOCKERFILE} (build arguments {build_args}; CA bundle for pip: "
        f"{ca_bundle or 'pip default'}). On an NGC base this takes about 10-20 minutes the first time, "
        "mostly downloading; later builds reuse the engine's layer cache.",
        flush=True,
    )
    image = build.build_image(
        repo,
        dockerfile=DOCKERFILE,
        tag=args.tag,
        build_args=build_args,
        ca_bundle=ca_bundle,
        network=None if args.network == "default" else args.network,
        progress=lambda line: print(line, flush=True),
    )
    args.id_file.parent.mkdir(parents=True, exist_ok=True)
    args.id_file.write_text(image.id + "\n")
    print(f"Built {image.id} ({', '.join(image.tags)}); labels {image.labels}")
    print(f"Image id written to {args.id_file}")
    return 0


def _build_apptainer(args: argparse.Namespace, repo: Path, extra: dict[str, str]) -> int:
    binary = engine.apptainer_binary()
    if binary is None:
        raise GpureproError("container build --engine apptainer: apptainer (or singularity) is not on PATH")
    if args.out is None:
        raise GpureproError("container build --engine apptainer needs --out (the SIF file to write)")
    bootstrap, sep, source = args.source.partition("://")
    if not sep or bootstrap not in ("docker-daemon", "docker-archive", "docker"):
        raise GpureproError(
            f"--source {args.source}: expected docker-daemon://TAG, docker-archive://FILE or docker://IMAGE"
        )
    arguments = {"BOOTSTRAP": bootstrap, "SOURCE": source, **extra}
    command = [binary, "build", "--force"]
    for name, value in arguments.items():
        command += ["--build-arg", f"{name}={value}"]
    command += [str(args.out), str(repo / APPTAINER_DEFINITION)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print("Running:", " ".join(command), flush=True)
    return subprocess.run(command).returncode


# exec ---------------------------------------------------------------------------------------------------


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


def _image_reference(args: argparse.Namespace) -> str:
    if args.image:
        return args.image
    if args.image_id_file is None:
        raise GpureproError(f"container exec --engine {args.engine} needs --image-id-file or --image")
    try:
        reference = args.image_id_file.read_text().strip()
    except OSError as err:
        raise GpureproError(f"cannot read the image id from {args.image_id_file}: {err}") from err
    if not reference:
        raise GpureproError(f"{args.image_id_file} is empty: rebuild the image (snakemake build_image)")
    return reference


def forwarded_env() -> dict[str, str]:
    """The workflow's settings for jobs (GPUREPRO_* variables: config hash, device check, ...), which a
    container does not inherit from the host as a child process would."""
    return {name: value for name, value in os.environ.items() if name.startswith("GPUREPRO_")}


def exec_command(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The command line `container exec` runs, and the environment it runs with."""
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise GpureproError("container exec: no command given (put it after --)")
    env = dict(os.environ)
    if args.engine == "none":
        env.pop("GPUREPRO_IMAGE_ID", None)
        return command, {**env, "GPUREPRO_CONTAINER_ENGINE": "none"}
    repo = (args.repo or Path.cwd()).resolve()
    reference = _image_reference(args)
    job_env = {**forwarded_env(), "GPUREPRO_CONTAINER_ENGINE": args.engine}
    # The checkout's code runs, not the copy installed in the image: the git commit in the provenance is
    # then the code that measured, and editing the code needs no image rebuild.
    job_env["PYTHONPATH"] = str(repo / "src")
    spec_args = {
        "command": command,
        "repo": repo,
        "gpus": parse_gpus(args.gpus),
        "binds": [container_argv.Bind.parse(text) for text in args.bind],
    }
    if args.engine == "docker":
        image_id = reference if args.dry_run else build.inspect_image(reference).id
        spec = container_argv.JobSpec(
            image=image_id, env={**job_env, "GPUREPRO_IMAGE_ID": image_id}, **spec_args
        )
        argv = container_argv.docker_run(
            spec,
            uid=os.getuid(),
            gid=os.getgid(),
            user=getpass.getuser(),
            network=args.network,
            cap_add=args.cap_add,
        )
        return argv, env
    binary = engine.apptainer_binary()
    if binary is None and not args.dry_run:
        raise GpureproError("container exec --engine apptainer: apptainer (or singularity) is not on PATH")
    spec = container_argv.JobSpec(
        image=reference, env={**job_env, "GPUREPRO_IMAGE_ID": reference}, **spec_args
    )
    return container_argv.apptainer_exec(spec, binary=binary or "apptainer"), env


def run_exec(args: argparse.Namespace) -> int:
    argv, env = exec_command(args)
    if args.dry_run:
        print(shlex.join(argv))
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        # Replace this process: the engine's CLI (or the command itself) gets Snakemake's signals and
        # its exit status is the job's.
        os.execvpe(argv[0], argv, env)
    except FileNotFoundError as err:
        raise GpureproError(f"container exec: {argv[0]} not found on PATH") from err
    return 1  # not reached
