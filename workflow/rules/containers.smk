# Containers: the engine jobs run under (config `container`), the rule that builds the project's Docker
# image, and the helpers every GPU-measuring rule uses (the kernel build too: nvcc is in the image):
#
#   input:
#       **container_input(),            # the image-id file when the engine is docker, else nothing
#   shell:
#       container_exec(PLACER.measure_gpu) + "gpurepro sgemm ... " + str(PLACER.job_gpu) + " ..."
#
# container_exec(gpus) takes the host GPU(s) the job gets: an index, "{wildcards.gpu}", a list, or "cpu"
# or [] for none; with docker it is the prefix "gpurepro container exec ... --gpus N -- ", otherwise "".
# Inside a Docker job only those GPUs exist, numbered from 0 as in a cluster allocation: the GPU the
# command itself names is PLACER.job_gpu (in place of PLACER.measure_gpu) or PLACER.job_gpu_argument (of
# PLACER.gpu_argument); both are the host's numbers when the engine is not docker (placement.smk). A job
# that drives every selected GPU uses container_exec_all_gpus() and names GPUs by their host index.
# A tool that needs a Linux capability asks for it where it is used, with the reason beside it, e.g.
# container_exec(PLACER.measure_gpu, caps=["SYS_ADMIN"]) for DCGM's profiling metrics. Never --privileged.

import functools
import shlex
import shutil

from snakemake_interface_executor_plugins.settings import DeploymentMethod

from gpurepro.containers import engine as container_engines  # noqa: E402
from gpurepro.containers import plan as container_plan  # noqa: E402

# The CUDA kernels (kernels/) need nvcc and a GPU profile; without nvcc they are skipped, and said so.
KERNELS = IS_GPU and shutil.which("nvcc") is not None
if IS_GPU and not KERNELS:
    print(
        "gpurepro: nvcc not found: the cublas and tiled SGEMM kernels are skipped (SGEMM runs through "
        "torch only). Install the CUDA toolkit or run inside the project's container image.",
        file=sys.stderr,
    )
KERNEL_BACKENDS = ["cublas", "tiled"] if KERNELS else []

CONTAINER = config["container"]
_DEPLOYMENT = workflow.deployment_settings
SDM_APPTAINER = (
    _DEPLOYMENT is not None
    and DeploymentMethod.APPTAINER in _DEPLOYMENT.deployment_method
)
try:
    CONTAINER_ENGINE = container_engines.resolve_engine(
        CONTAINER["engine"],
        gpu_jobs=IS_GPU,
        cluster=CLUSTER,
        sdm_apptainer=SDM_APPTAINER,
    )
except GpureproError as err:
    stop_planning(f"bad config: {err}")

# The engine and image a job ran in go into its provenance: `gpurepro container exec` sets them inside a
# Docker job, Apptainer announces itself inside its containers, and a host job records none. Values
# left in this shell by hand must not be recorded instead.
for _name in ("GPUREPRO_CONTAINER_ENGINE", "GPUREPRO_IMAGE_ID"):
    os.environ.pop(_name, None)


# Every rule runs in this image when Snakemake runs with --sdm apptainer (container.engine auto or
# apptainer); otherwise Snakemake ignores it. It is the project's own image: a SIF made from the Docker
# image (README "Containers"), or an address Apptainer pulls.
container: CONTAINER["apptainer_image"]


APPTAINER_IMAGE = CONTAINER["apptainer_image"]
if (
    CONTAINER_ENGINE == "apptainer"
    and "://" not in APPTAINER_IMAGE
    and not Path(APPTAINER_IMAGE).exists()
):
    print(
        f"gpurepro: container.apptainer_image {APPTAINER_IMAGE} does not exist yet; jobs will fail until "
        f"it is built: gpurepro container build --engine apptainer --out {APPTAINER_IMAGE}",
        file=sys.stderr,
    )

# The image id, outside every device's results: one image serves all profiles.
IMAGE_ID_FILE = "build/container/image.id"
REPOSITORY = Path(workflow.basedir).resolve()
if CONTAINER_ENGINE == "docker" and Path.cwd().resolve() != REPOSITORY:
    stop_planning(
        f"container.engine=docker mounts the repository {REPOSITORY} into each job and runs it there: "
        f"run Snakemake from that folder (not from {Path.cwd()})"
    )
CONTAINERS = container_plan.ContainerPlan(
    engine=CONTAINER_ENGINE,
    repo=REPOSITORY,
    image_id_file=IMAGE_ID_FILE,
    gpu_jobs=IS_GPU,
    selected_gpus=tuple(GPUS),
    # Folders outside the repository that jobs write or read are mounted too, at the same path.
    binds=container_plan.outside_binds(
        REPOSITORY,
        [config["results_dir"], config["data"]["data_dir"]],
        CONTAINER["binds"],
    ),
)
DOCKER_GPU_JOBS = CONTAINERS.docker_gpu_jobs

# The helpers of the study rules (see the top of this file). ancient(): rebuilding the image (a new
# dependency, a new base) does not make finished measurements outdated; each records its image id.
container_input = functools.partial(CONTAINERS.job_input, ancient)
container_exec = CONTAINERS.exec_prefix
# Fails plainly, when a rule asks for it, under docker with a selection that is not GPUs 0..n-1.
container_exec_all_gpus = CONTAINERS.exec_all_gpus_prefix

# nvcc is in the image: under docker the kernels are built and run there, whether or not this host has
# a CUDA toolkit (decided above from the host's PATH alone).
if DOCKER_GPU_JOBS and not KERNELS:
    KERNELS = True
    KERNEL_BACKENDS = ["cublas", "tiled"]
    print(
        "gpurepro: container.engine=docker: the cublas and tiled SGEMM kernels are built and run in the "
        "project's image, which has nvcc",
        file=sys.stderr,
    )


rule build_image:
    input:
        dockerfile="containers/Dockerfile",
        ignore=".dockerignore",
        project=[
            "pyproject.toml",
            "README.md",
            "containers/missing_requirements.py",
            *sorted(
                str(p.relative_to(REPOSITORY)) for p in REPOSITORY.glob("src/**/*.py")
            ),
        ],
    output:
        IMAGE_ID_FILE,
    log:
        "build/container/build_image.log",
    benchmark:
        "build/container/build_image.tsv"
    localrule: True
    params:
        tag=CONTAINER["image"],
        base=CONTAINER["base_image"],
        build_args=" ".join(
            f"--build-arg {shlex.quote(f'{name}={value}')}"
            for name, value in CONTAINER["build_args"].items()
        ),
    shell:
        "gpurepro container build --engine docker --tag {params.tag} --base-image {params.base} "
        "{params.build_args} --id-file {output} > {log} 2>&1"
