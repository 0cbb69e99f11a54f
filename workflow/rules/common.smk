# Helpers every study's rules use: config and profile validation, device resolution, result paths,
# resources that keep two measurements off one GPU, and the telemetry flags every measuring job takes.

import atexit
import functools
import os
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger as snakemake_logger
from snakemake.utils import validate

# Parse-time helpers come from this checkout's package, so a dry-run works before installation too.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from gpurepro import nvml, profiles, provenance, registry, round_order  # noqa: E402
from gpurepro.errors import GpureproError  # noqa: E402
from gpurepro.forkserver import lifecycle as forkserver  # noqa: E402
from gpurepro.host import SLICE_GPUS_VAR  # noqa: E402
from gpurepro.more_processes import read_plan  # noqa: E402
from gpurepro.placement import host_share  # noqa: E402
from gpurepro.runs import gpu_check, interrupt, stale_lock  # noqa: E402
from gpurepro.schema import coerce_cli_scalars, first_error  # noqa: E402
from gpurepro.telemetry.cooldown import forget_levels  # noqa: E402

SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"


# set when the run stopped with a message: nothing is estimated after it
PLANNING_STOPPED = []


def stop_planning(message):
    """Stop the run with `message` alone on stderr, exit status 1: bad config or profile at start, a
    target that cannot be planned, raw data a run would replace. Snakemake would show a WorkflowError
    with its file lines, an input function's exception with its traceback, and a dry-run's estimate
    (runplan.smk) after either."""
    PLANNING_STOPPED.append(message)
    sys.exit(message)


def validated(data, schema, what):
    """snakemake.utils.validate, with the failing key, value and allowed values said first, in one line."""
    try:
        validate(data, str(SCHEMAS / schema))
    except WorkflowError:
        stop_planning(f"{what}: {first_error(data, SCHEMAS / schema)}")


config.update({key: coerce_cli_scalars(value) for key, value in config.items()})
validated(config, "config.schema.yaml", "bad config")


@functools.cache
def nvml_gpus():
    """(every GPU NVML sees here, why it sees none): empty without NVML (planning on another machine).
    Cached: device=auto, the GPU list, the estimate and the check at start all ask; NVML is queried once.
    """
    try:
        return nvml.all_gpu_info(), ""
    except nvml.NvmlUnavailable as err:
        return [], str(err)


def detected_gpus():
    """GPUs NVML sees here, limited to config `gpus` (those of them that exist)."""
    gpus, _ = nvml_gpus()
    if config["gpus"] == "all":
        return gpus
    return [g for g in gpus if g.index in config["gpus"]]


# On a cluster (profiles/slurm sets cluster.enabled) every GPU job is its own allocation of one GPU, which
# the scheduler makes the only GPU the job sees: jobs measure GPU 0 of their allocation and ask for it
# with the `gpu` and `gpu_model` resources that snakemake-executor-plugin-slurm turns into --gpus.
CLUSTER = config["cluster"]["enabled"]


def resolve_device():
    """The profile name: config `device`, or for auto the one matching the GPUs found (cpu if none)."""
    if config["device"] != "auto":
        return config["device"]
    if CLUSTER:
        stop_planning(
            "device=auto with cluster.enabled: the GPUs are on the compute nodes, not here; name the "
            "profile, e.g. --config device=h100"
        )
    # auto means the GPUs here: config gpus must name GPUs that exist, dry run or not
    missing = gpu_check.missing_indices(config["gpus"], nvml_gpus()[0])
    if missing:
        stop_planning(f"device=auto: {missing}")
    try:
        return profiles.pick_profile(detected_gpus())
    except GpureproError as err:
        stop_planning(f"device=auto: {err}")


DEVICE = resolve_device()
PROFILE = profiles.read_profile(DEVICE, Path(workflow.basedir) / "config" / "devices")
validated(
    PROFILE, "device.schema.yaml", f"bad device profile config/devices/{DEVICE}.yaml"
)
PROFILE = profiles.with_quick_settings(PROFILE, config["quick"])
IS_GPU = PROFILE["kind"] == "gpu"
if not IS_GPU and config["gpus"] != "all":
    print(
        f"gpurepro: config gpus={config['gpus']} is ignored: profile {DEVICE} measures the CPU "
        "(no GPU is measured here)",
        file=sys.stderr,
    )


def planned_gpus():
    """GPU indices measured on: config `gpus` as named, or with gpus=all those NVML sees (GPU 0 without
    NVML). A named profile plans for the GPUs asked for, also where NVML sees fewer or none (a dry run
    plans for hardware that is not here; a real run checks them first, check_gpus_at_start). On a
    cluster they are not GPUs of this machine but one allocation each (gpus=[0,1,2,3]: four), all
    measuring GPU 0.
    """
    if not IS_GPU:
        return []
    if config["gpus"] != "all":
        return sorted(config["gpus"]) if nvml_gpus()[0] else list(config["gpus"])
    here = [] if CLUSTER else [g.index for g in detected_gpus()]
    return here or [0]


GPUS = planned_gpus()
MEASURE_GPU = (0 if CLUSTER else GPUS[0]) if IS_GPU else "cpu"
# The GPU argument of a job with a {gpu} wildcard (a shell snippet, so local commands stay as they were);
# the cpu profile's is "cpu", on a cluster too.
GPU_ARGUMENT = "0" if CLUSTER and IS_GPU else "{wildcards.gpu}"

RESULTS = f"{config['results_dir']}/{DEVICE}"
# each GPU's idle temperature, cool-down levels and last measurement's end in this run
# (telemetry/cooldown.py)
COOLDOWN_DIR = f"{RESULTS}/cooldown"
CONFIG_HASH = provenance.config_hash(config)
# Jobs read these from the environment rather than their command line: a param change makes Snakemake
# rerun a job, and changing the device check or an unrelated key must not rerun finished measurements.
# gpurepro/environment.py lists every GPUREPRO_* variable, who sets it and why.
os.environ.update(
    GPUREPRO_CONFIG_HASH=CONFIG_HASH, GPUREPRO_DEVICE_CHECK=config["device_check"]
)


FORK_SERVER = []  # the run's fork server, once onstart has started it


def say_if_a_killed_run_left_its_lock():
    """At exit: a run killed outright left Snakemake's lock (and incomplete outputs) here; say what
    happened and the two commands that go on (gpurepro/runs/stale_lock.py). At exit, after Snakemake's
    own error, because the Snakefile is read before Snakemake knows whether it is to run, plan or
    --unlock; an --unlock has removed the lock by then and says nothing more.
    """
    message = stale_lock.stale_lock_message(Path.cwd())
    if message:
        print(message, file=sys.stderr)


if workflow.is_main_process:
    atexit.register(say_if_a_killed_run_left_its_lock)


def check_gpus_at_start():
    """Before the first job of a real run on this machine's GPUs: stop, writing nothing, when NVML finds
    no GPU, fewer than config `gpus` names, or another model than the profile's (device_check=warn
    measures anyway, saying so); gpurepro/runs/gpu_check.py. A dry run plans without it; on a cluster
    the GPUs are the nodes', and each job checks its own.
    """
    if not IS_GPU or CLUSTER:
        return
    found, nvml_problem = nvml_gpus()
    try:
        warnings = gpu_check.check_start(
            PROFILE, config["gpus"], found, nvml_problem, config["device_check"]
        )
    except GpureproError as err:
        stop_planning(str(err))
    for warning in warnings:
        print(
            f"gpurepro: {warning}; measuring anyway (device_check=warn)",
            file=sys.stderr,
        )


def fork_server_wanted():
    """Local jobs on the host start by fork from one preloaded process (gpurepro.forkserver); jobs in a
    container or on a cluster node could not reach it, and start their own interpreters as before.
    """
    return config["fork_server"] and not CLUSTER and CONTAINER_ENGINE == "none"


def start_fork_server():
    if not fork_server_wanted():
        return
    try:
        FORK_SERVER.append(forkserver.start(Path(RESULTS, "logs", "forkserver.log")))
    except RuntimeError as err:
        print(f"gpurepro: {err}: every job starts its own interpreter", file=sys.stderr)


def stop_fork_server():
    while FORK_SERVER:
        FORK_SERVER.pop().stop()


onstart:
    # Checked once the executor is known (a dry-run plans without one): cluster.enabled measures GPU 0 of
    # each job's own allocation, which is only right where the scheduler gives each job its own GPU.
    if IS_GPU and workflow.non_local_exec != CLUSTER:
        stop_planning(
            "cluster.enabled is off but jobs go to a cluster executor: run with --profile profiles/slurm "
            "(it sets cluster.enabled), or add cluster={enabled: true} to your --configfile"
            if workflow.non_local_exec
            else "cluster.enabled is on but jobs run here: every GPU job would measure GPU 0 at once. "
            "Use the default profile, or --profile profiles/slurm"
        )
    # --touch marks outputs up to date (their times and Snakemake's metadata) and runs no job: it replaces
    # no raw file, so neither the guard nor the estimate nor the fork server has work to do
    if not workflow.touch:
        # first: the GPUs asked for are here, before anything is written
        check_gpus_at_start()
        # then: nothing measured is replaced unless asked for (runplan.smk)
        guard_raw_data()
        print_estimate()
        # which GPU measures each claim group, round by round (placement.smk)
        write_placement()
        # kept beside the results as config/<hash>.yaml: `gpurepro compare` lists the keys two runs differ in
        provenance.record_config(config, Path(RESULTS), CONFIG_HASH)
        # the levels cool-downs end at are learned afresh by each run (telemetry/cooldown.py)
        forget_levels(Path(COOLDOWN_DIR))
        start_fork_server()
        # from the first job on, Ctrl-C ends the run in one line (gpurepro/runs/interrupt.py)
        interrupt.watch_interrupts(interrupt.console_handlers(snakemake_logger))


onerror:
    stop_fork_server()


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


def cluster_resources():
    """What a GPU job asks the scheduler for: one GPU, of the profile's model unless gpu_model says."""
    model = config["cluster"]["gpu_model"]
    model = DEVICE if model == "profile" else model
    return {"gpu": 1} if model == "any" else {"gpu": 1, "gpu_model": model}


def claim_group(rule):
    """The `group:` of a placed rule's jobs: on a cluster, each job's claim group and round (gpurepro/
    placement/groups.py cluster_group), which profiles/slurm runs as one allocation of one GPU that
    measures them one after another; None locally, where placement.smk places them (Snakemake ignores
    groups in a local run, but a local dry-run would show them)."""
    if not CLUSTER:
        return None
    from gpurepro.placement import groups

    planned = functools.cache(lambda: groups.planned_keys(measuring_points()))

    def named(wildcards):
        # the submitting process; in an allocation each job of the group runs on its own, one at a time
        if workflow.non_local_exec and workflow.is_main_process:
            problem = groups.cluster_settings_problem(
                workflow.global_resources["_cores"].value,
                workflow.group_settings.group_components.get(groups.CLUSTER_GROUPS, 1),
            )
            if problem:
                stop_planning(f"gpurepro: {problem}")
        name = groups.cluster_group(rule, dict(wildcards.items()), planned())
        # so that the profile's group-components claim_groups=N reads every claim group's name
        workflow.parent_groupids[name] = groups.CLUSTER_GROUPS
        return name

    return named


def measure_resources(gpu=MEASURE_GPU):
    """A resource per GPU (gpu_0, gpu_1, ...; profiles/default caps each at 1) so two measurements never
    share a GPU, while jobs on different GPUs may run side by side. On a cluster: one GPU per job.
    """
    if gpu == "cpu":
        return {}
    return cluster_resources() if CLUSTER else {f"gpu_{gpu}": 1, "gpu": 1}


def all_gpus_resources():
    """Every selected GPU of this machine, for a job that uses them all at once (a node job, the noise
    workload beside a measurement); none on the cpu profile."""
    return {**{f"gpu_{g}": 1 for g in GPUS}, "gpu": len(GPUS)} if IS_GPU else {}


# Claim-affine placement (gpurepro/placement, placement.smk): the points one claim compares (a claim
# group) share a GPU within a round, and with two or more GPUs here the groups are packed onto them. One
# GPU keeps every point on it, as measure_resources() does; the cpu profile and a cluster keep
# measure_resources() and JOB_GPU.
LOCAL_GPUS = IS_GPU and not CLUSTER
PLACED = LOCAL_GPUS and len(GPUS) > 1 and config["placement"] == "claim_groups"


def placed_resources(rule):
    """measure_resources for the measuring jobs of `rule`, placed by claim group (a claim group's jobs
    of one round share a GPU): each takes `gpu_<g>` of its group's GPU (job_placement, placement.smk).
    """
    if not PLACED:
        return measure_resources()
    claims = {
        f"gpu_{g}": (
            lambda wildcards, g=g: int(
                job_placement().gpu(rule, dict(wildcards.items())) == g
            )
        )
        for g in GPUS
    }
    if registry.BY_RULE[rule].mps:
        # One MPS point at a time on the node: each starts its own MPS control daemon, and two daemons
        # serving two GPUs at once were never tried (profiles/default caps mps_daemon at 1).
        claims["mps_daemon"] = lambda wildcards: int(wildcards.scheme == "mps")
    return {**claims, "gpu": 1}


def placed_host_gpu(wildcards, resources):
    """The GPU a placed job measures: the one whose `gpu_<g>` it holds. A param derived from resources,
    so the GPU a point ran on is no reason to measure it again: Snakemake reruns a job whose params
    changed, not one whose resources did (another GPU selection places the groups anew).
    """
    return next((g for g in GPUS if getattr(resources, f"gpu_{g}", 0)), MEASURE_GPU)


def placed_job_gpu(wildcards, resources):
    """The GPU a placed job's command names: placed_host_gpu, or 0 inside a Docker job (as JOB_GPU)."""
    return CONTAINERS.job_gpu(placed_host_gpu(wildcards, resources))


def placed_params():
    """The params of a placed rule's GPU: `gpu`, the one its command names, and on this machine's GPUs
    `host_gpu`, the host's index (a Docker job's --gpus). The cpu profile and a cluster take JOB_GPU, as
    they did: there a param read from resources would have Snakemake size inputs while planning.
    """
    if not LOCAL_GPUS:
        return {"gpu": JOB_GPU}
    return {"gpu": placed_job_gpu, "host_gpu": placed_host_gpu}


def placed_container_exec():
    """container_exec for a placed rule: its job's own GPU (params.host_gpu) on this machine's GPUs."""
    return container_exec("{params.host_gpu}" if LOCAL_GPUS else MEASURE_GPU)


def per_gpu_resources():
    """measure_resources for rules with a {gpu} wildcard: the job takes the resource of its own GPU."""
    if not IS_GPU:
        return {}
    if CLUSTER:
        return cluster_resources()
    claims = {
        f"gpu_{g}": (lambda wildcards, g=g: int(int(wildcards.gpu) == g)) for g in GPUS
    }
    return {**claims, "gpu": 1}


def per_gpu_params():
    """placed_params for the rules with a {gpu} wildcard on this machine's GPUs: `gpu`, the one its command
    names (0 inside a Docker job), and `host_gpu`, the wildcard's (a Docker job's --gpus).
    """
    return {
        "gpu": lambda wildcards: CONTAINERS.job_gpu(wildcards.gpu),
        "host_gpu": lambda wildcards: wildcards.gpu,
    }


# The reference rates' jobs (reference.smk): one per selected GPU under placement, else one.
def reference_resources():
    """Each GPU's job holds its own GPU under placement; else the SGEMM group's GPU, as before."""
    return per_gpu_resources() if PLACED else placed_resources("reference_run")


def reference_params():
    """The GPU params of a reference job: its {gpu} wildcard's under placement, else placed_params()."""
    return per_gpu_params() if PLACED else placed_params()


def reference_tables():
    """The raw rates the table is made of: one file per selected GPU under placement, else the one."""
    table = rules.reference_run.output.table
    return expand(table, gpu=GPUS) if PLACED else table


def all_cores():
    """Every core Snakemake was given; without --cores nothing runs (--report, --lint): any count will do."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def measure_threads():
    """A CPU measurement takes every core, so nothing runs beside it; a GPU job needs one."""
    return 1 if IS_GPU else all_cores()


def host_bound_threads():
    """A measurement bound by the host (eager inference at batch 1 launches hundreds of kernels from
    Python) takes every core locally, so no aggregation, plot or other GPU's job shares the host while it
    is timed (on one H100, eager DeiT-B blocks timed beside such jobs spread over an IQR of 13% of their
    median). On a cluster the scheduler gives each job its own cores."""
    return measure_threads() if CLUSTER else all_cores()


# Under claim-group placement each GPU's jobs pin to a CPU slice of their own (host.cpu_slice: the GPUs
# sharing a NUMA node split its cores), and the kinds of point config `host_to_itself` lists take every
# core, so that nothing runs beside them (gpurepro/placement/host_share.py; benchmarks/isolation.py
# measured which need it). Jobs read the GPUs measuring side by side from the environment.
HOST_TO_ITSELF = frozenset(config["host_to_itself"])
if PLACED:
    os.environ[SLICE_GPUS_VAR] = ",".join(str(g) for g in GPUS)


def unplaced_threads(rule):
    """The threads a measuring rule's jobs have without placement, as in the one-GPU plan: every core for
    the rules whose record says so (inference: host_bound_threads), one for the other studies' points.
    """
    return (
        host_bound_threads() if registry.BY_RULE[rule].every_core else measure_threads()
    )


def placed_threads(rule):
    """The threads of a placed measuring rule's jobs: every core for the kinds that keep the host to
    themselves under claim-group placement, one otherwise; without placement, as before.
    """
    if not PLACED:
        return unplaced_threads(rule)
    return lambda wildcards: (
        all_cores()
        if host_share.takes_the_host(rule, dict(wildcards.items()), HOST_TO_ITSELF)
        else measure_threads()
    )


def measuring_flags(rule, flags):
    """The `flags` param of a placed measuring rule: under placement, where a job's threads differ from
    the one-GPU plan's, with `--torch-threads` of the one-GPU plan, so that a point measures with the same
    torch threads wherever it is placed: a job that keeps the host holds every core to keep other jobs
    off it, not to use them (placed with 64 torch threads, a serial HFTA point read 1.36x [0.79, 1.83]
    its one-GPU figure with one, on the same host: within noise, but a condition the placement changed).
    Without placement the flags as they are, so that a one-GPU plan's commands stay as they were.
    """
    if not PLACED:
        return flags
    wanted, held = unplaced_threads(rule), placed_threads(rule)

    def placed(wildcards):
        return (
            flags if held(wildcards) == wanted else f"{flags} --torch-threads {wanted}"
        )

    return placed


def check_inference_points(key, precisions, modes):
    """Stop with the key and value when a point asks for a precision the GPU lacks, or for cudagraph
    where there is no GPU."""
    unsupported = sorted(set(precisions) - set(PROFILE["precisions"]))
    if unsupported:
        stop_planning(
            f"bad device profile config/devices/{DEVICE}.yaml: key inference.{key}: precisions {unsupported} "
            f"not in the profile's precisions {PROFILE['precisions']}"
        )
    if not IS_GPU and "cudagraph" in modes:
        stop_planning(
            f"bad device profile config/devices/{DEVICE}.yaml: key inference.{key}: cudagraph needs a GPU"
        )


def kernel_binary(wildcards):
    """The sgemm binary for the kernel backends; torch needs none."""
    return [] if wildcards.backend == "torch" else rules.build_kernels.output.sgemm


# Input functions of the repeated studies' rules (inference.smk, variability.smk), kept here as
# Snakemake's lint asks: the names they read are those files' own.
def previous_inference_round(family):
    """Round r of a point waits for round r - 1 of every point of its family and for the point before
    it in its claim group's seeded order of round r (gpurepro/round_order.py)."""
    shape = INFERENCE_FAMILIES[family]
    raw = f"{INFERENCE_RAW}/{family}/{shape['stem']}.csv"
    return lambda wildcards: round_order.waits_for(
        f"infer_{family}", raw, shape["runs"], wildcards, INFERENCE, config["seed"]
    )


# More processes where a claim needs them (more_processes.smk): GPU profiles only, as on the CPU every claim
# is "not measured"; a quick run's own budget.
MORE = {
    **config["more_processes"],
    **(config["more_processes"].get("quick", {}) if config["quick"] else {}),
}
MORE_ROUNDS = MORE["rounds"] if IS_GPU else 0
MORE_DIR = f"{RESULTS}/more_processes"


def extra_points(family, rounds):
    """The points the first `rounds` extra rounds of a family (hfta, deit, bert) gave one more process,
    round by round; the rounds end at the first that planned none. Each round's plan is read through
    its checkpoint, so the jobs it asks for are planned once it has run."""
    points = []
    for extra_round in range(1, min(rounds, MORE_ROUNDS) + 1):
        planned = checkpoints.more_processes.get(family=family, round=extra_round)
        plan = read_plan(planned.output.plan)
        if not plan:
            break
        points += plan
    return points


def family_raw(family, rounds, output="table"):
    """Raw files (`output`: table or trace) of one family's points (hfta, deit, bert): its own rounds,
    then the first `rounds` extra ones."""
    if family == "hfta":
        measured, own = rules.hfta_point.output, HFTA_RUNS
    else:
        measured = getattr(rules, f"infer_{family}").output
        own = INFERENCE_FAMILIES[family]["runs"]
    extra = [p["wildcards"] for p in extra_points(family, rounds)]
    pattern = getattr(measured, output)
    return [pattern.format(**point) for point in [*own, *extra]]


def round_tables(family, round):
    """The tables a family's claims are judged on before extra round `round`."""
    tables = (
        rules.hfta_round_tables if family == "hfta" else rules.inference_round_tables
    )
    return [path.format(family=family, round=round) for path in tables.output]


def variability_raw(backend, gpu, run):
    """The raw table of one variability point: the SGEMM study's where that point measured it
    (variability.smk, VARIABILITY_SHARES_SGEMM)."""
    if VARIABILITY_SHARES_SGEMM and int(run) == 1 and backend in SGEMM_BACKENDS:
        return rules.sgemm_run.output.table.format(backend=backend, n=VARIABILITY["n"])
    return f"{VARIABILITY_RAW}.csv".format(backend=backend, gpu=gpu, run=run)


def previous_variability_run(wildcards):
    """Run r of a GPU waits for its run r-1, so the runs on one GPU follow each other instead of
    competing for it, wherever that run's file is; run r of a node job (no {gpu}: every GPU) waits for
    its run r-1, whose files the first GPU's stands for."""
    run = int(wildcards.run)
    gpu = wildcards.get("gpu", GPUS[0] if GPUS else "cpu")
    return [] if run == 1 else variability_raw(wildcards.backend, gpu, run - 1)


def binary_flag(wildcards, input):
    return f"--binary {input.binary}" if input.binary else ""


# Every measuring job writes DCGM's profiling metrics to <stem>.dcgm.csv beside its telemetry trace where
# DCGM exists, and its provenance says why not where it does not. Not a rule output, as most machines
# have no DCGM; set in the environment rather than in measurement_flags(), so that turning it off
# (GPUREPRO_DCGM_OUT=off before running snakemake) or on does not make Snakemake rerun finished
# measurements.
os.environ.setdefault("GPUREPRO_DCGM_OUT", "auto")


def measurement_flags(study, energy_window_s=None, section=None):
    """Options every measuring `gpurepro` subcommand of `study` takes: profile, GPU check, seed, CPU
    pinning, telemetry. A study may ask for a longer energy window than telemetry.min_energy_window_s,
    never a shorter one, its profile `section` may set a shorter idle baseline (profiles.idle_seconds),
    and a quick run may leave its cool-downs out (profiles.cooldown_max_wait_s).
    """
    t = config["telemetry"]
    window = max(t["min_energy_window_s"], energy_window_s or 0)
    idle = profiles.idle_seconds(section or {}, config)
    pin = config["host"]["pin"] or "off"  # a bare `off` in YAML reads as false
    return (
        f"--profile {DEVICE} --seed {config['seed']} --pin {pin} "
        f"--rate-hz {t['rate_hz']} --sampler {t['sampler']} "
        f"--idle-seconds {idle} --energy-window-s {window} "
        f"--cooldown-max-wait-s {profiles.cooldown_max_wait_s(config, study)} "
        f"--idle-temperature-dir {COOLDOWN_DIR}"
    )


def end_record_flag():
    """GPU work that is no measurement (training, the reference rates) records its end in the run's
    cool-down folder, so the next measurement on its GPUs settles after it (telemetry/cooldown.py).
    """
    return f"--idle-temperature-dir {COOLDOWN_DIR}" if IS_GPU else ""


def raw_outputs(stem):
    """A raw table, its telemetry trace and both provenance sidecars, write-protected once made."""
    return {
        "table": protected(f"{stem}.csv"),
        "table_provenance": protected(f"{stem}.provenance.json"),
        "trace": protected(f"{stem}.telemetry.csv"),
        "trace_provenance": protected(f"{stem}.telemetry.provenance.json"),
    }


# Helpers of report.smk (the verdict, runtimes and combined tables), here with the other functions.
PROFILE_NAMES = profiles.profile_names(Path(workflow.basedir) / "config" / "devices")


def study_outputs(folder, suffix):
    """Every `<RESULTS>/<folder>/<name><suffix>` made by the rules included so far, by name. Called once
    the studies are included: the tables and plots of whichever studies exist, none of them named here.
    """
    prefix = f"{RESULTS}/{folder}/"
    found = {}
    for rule_ in workflow.rules:
        for path in map(str, rule_.output):
            name = path[len(prefix) :]
            if path.startswith(prefix) and name.endswith(suffix) and "/" not in name:
                found[name[: -len(suffix)]] = path
    return dict(sorted(found.items()))


def other_device_tables(name="*"):
    """tables/<name>.csv of every other profile's results folder here (copied from other machines, or
    from earlier runs of another profile)."""
    return sorted(
        str(path)
        for path in Path(config["results_dir"]).glob(f"*/tables/{name}.csv")
        if path.parent.parent.name in PROFILE_NAMES
        and path.parent.parent.name != DEVICE
    )


def device_tables(wildcards):
    """This run's table (made by its rule) and the same table of every other profile's results folder."""
    made_here = wildcards.table in {*STUDY_TABLES, "runtimes"}
    own = [f"{RESULTS}/tables/{wildcards.table}.csv"] if made_here else []
    return own + other_device_tables(wildcards.table)
