# Helpers every study's rules use: config and profile validation, device resolution, result paths,
# resources that keep two measurements off one GPU, and the telemetry flags every measuring job takes.

import os
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# Parse-time helpers come from this checkout's package, so a dry-run works before installation too.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from gpurepro import nvml, profiles, provenance  # noqa: E402
from gpurepro.errors import GpureproError  # noqa: E402
from gpurepro.schema import coerce_cli_scalars, first_error  # noqa: E402

SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"


def validated(data, schema, what):
    """snakemake.utils.validate, with the failing key, value and allowed values said first, in one line."""
    try:
        validate(data, str(SCHEMAS / schema))
    except WorkflowError as err:
        raise WorkflowError(f"{what}: {first_error(data, SCHEMAS / schema)}") from err


config.update({key: coerce_cli_scalars(value) for key, value in config.items()})
validated(config, "config.schema.yaml", "bad config")


def detected_gpus():
    """GPUs NVML sees here, limited to config `gpus`; empty without NVML (planning on another machine)."""
    try:
        gpus = nvml.all_gpu_info()
    except nvml.NvmlUnavailable:
        return []
    if config["gpus"] == "all":
        return gpus
    missing = sorted(set(config["gpus"]) - {g.index for g in gpus})
    if missing:
        raise WorkflowError(
            f"config gpus={config['gpus']}: GPU(s) {missing} do not exist here; "
            f"NVML sees indices {[g.index for g in gpus]}"
        )
    return [g for g in gpus if g.index in config["gpus"]]


def resolve_device():
    """The profile name: config `device`, or for auto the one matching the GPUs found (cpu if none)."""
    if config["device"] != "auto":
        return config["device"]
    try:
        return profiles.pick_profile(detected_gpus())
    except GpureproError as err:
        raise WorkflowError(f"device=auto: {err}")


DEVICE = resolve_device()
PROFILE = profiles.read_profile(DEVICE, Path(workflow.basedir) / "config" / "devices")
validated(
    PROFILE, "device.schema.yaml", f"bad device profile config/devices/{DEVICE}.yaml"
)
PROFILE = profiles.with_quick_settings(PROFILE, config["quick"])
IS_GPU = PROFILE["kind"] == "gpu"

# GPU indices measured on. Planning a GPU profile on a machine without one assumes GPU 0.
GPUS = [g.index for g in detected_gpus()] if IS_GPU else []
if IS_GPU and not GPUS:
    GPUS = [0] if config["gpus"] == "all" else list(config["gpus"])
MEASURE_GPU = GPUS[0] if IS_GPU else "cpu"

RESULTS = f"{config['results_dir']}/{DEVICE}"
CONFIG_HASH = provenance.config_hash(config)
# Jobs read these from the environment rather than their command line: a param change makes Snakemake
# rerun a job, and changing the device check or an unrelated key must not rerun finished measurements.
os.environ.update(
    GPUREPRO_CONFIG_HASH=CONFIG_HASH, GPUREPRO_DEVICE_CHECK=config["device_check"]
)


# The CUDA kernels (kernels/) need nvcc and a GPU profile; without nvcc they are skipped, and said so.
KERNELS = IS_GPU and shutil.which("nvcc") is not None
if IS_GPU and not KERNELS:
    print(
        "gpurepro: nvcc not found: the cublas and tiled SGEMM kernels are skipped (SGEMM runs through "
        "torch only). Install the CUDA toolkit or run inside the project's container image.",
        file=sys.stderr,
    )
KERNEL_BACKENDS = ["cublas", "tiled"] if KERNELS else []


wildcard_constraints:
    n=r"\d+",
    gpu=r"\d+|cpu",
    run=r"\d+",
    backend="torch|cublas|tiled",


def measure_resources(gpu=MEASURE_GPU):
    """A resource per GPU (gpu_0, gpu_1, ...; profiles/default caps each at 1) so two measurements never
    share a GPU, while jobs on different GPUs may run side by side."""
    return {} if gpu == "cpu" else {f"gpu_{gpu}": 1, "gpu": 1}


def per_gpu_resources():
    """measure_resources for rules with a {gpu} wildcard: the job takes the resource of its own GPU."""
    if not IS_GPU:
        return {}
    claims = {
        f"gpu_{g}": (lambda wildcards, g=g: int(int(wildcards.gpu) == g)) for g in GPUS
    }
    return {**claims, "gpu": 1}


def measure_threads():
    """A CPU measurement takes every core, so nothing runs beside it; a GPU job needs one."""
    return 1 if IS_GPU else workflow.cores


def kernel_binary(wildcards):
    """The sgemm binary for the kernel backends; torch needs none."""
    return [] if wildcards.backend == "torch" else rules.build_kernels.output.sgemm


def previous_run(pattern):
    """Input function: run r of a repeated measurement waits for run r-1 (same other wildcards), so the
    runs on one GPU follow each other instead of competing for it."""

    def previous(wildcards):
        run = int(wildcards.run)
        return [] if run == 1 else pattern.format(**{**wildcards, "run": run - 1})

    return previous


def binary_flag(wildcards, input):
    return f"--binary {input.binary}" if input.binary else ""


def measurement_flags():
    """Options every measuring `gpurepro` subcommand takes: profile, GPU check, seed, telemetry."""
    t = config["telemetry"]
    return (
        f"--profile {DEVICE} --seed {config['seed']} --rate-hz {t['rate_hz']} --idle-seconds {t['idle_seconds']} "
        f"--energy-window-s {t['min_energy_window_s']} --cooldown-max-wait-s {t['cooldown_max_wait_s']}"
    )


def raw_outputs(stem):
    """A raw table, its telemetry trace and both provenance sidecars, write-protected once made."""
    return {
        "table": protected(f"{stem}.csv"),
        "table_provenance": protected(f"{stem}.provenance.json"),
        "trace": protected(f"{stem}.telemetry.csv"),
        "trace_provenance": protected(f"{stem}.telemetry.provenance.json"),
    }
