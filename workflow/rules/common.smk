# What Snakemake itself needs of every study's rules: the config and profile validated, the device and
# GPUs, result paths, the run's start and end handlers, and the input functions the rule files share.
# Placement (which GPU, CPU slice, threads and resources a job has) is placement.smk's; the logic of
# both lives in the package (gpurepro/runs, gpurepro/placement), where it is unit-tested.

import atexit
import functools
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger as snakemake_logger
from snakemake.utils import validate

# Parse-time helpers come from this checkout's package, so a dry-run works before installation too.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from gpurepro import profiles, provenance, registry, round_order  # noqa: E402
from gpurepro.errors import GpureproError  # noqa: E402
from gpurepro.forkserver import lifecycle as forkserver  # noqa: E402
from gpurepro.more_processes import read_plan  # noqa: E402
from gpurepro.runs import devices, interrupt, job_flags, result_files  # noqa: E402
from gpurepro.runs import stale_lock  # noqa: E402
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


# On a cluster (profiles/slurm sets cluster.enabled) every GPU job is its own allocation of one GPU, which
# the scheduler makes the only GPU the job sees (gpurepro/placement/placer.py).
CLUSTER = config["cluster"]["enabled"]
try:
    DEVICE = devices.resolve_device(config, CLUSTER)
except GpureproError as err:
    stop_planning(str(err))
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
# the GPUs measured on (gpurepro/runs/devices.py); on a cluster, one allocation each
GPUS = devices.planned_gpus(config["gpus"], IS_GPU, CLUSTER)
detected_gpus = functools.partial(devices.detected_gpus, config["gpus"])

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
    """At exit, after Snakemake's own error: a run killed outright left Snakemake's lock here; say what
    happened and the two commands that go on (gpurepro/runs/stale_lock.py). At exit because the
    Snakefile is read before Snakemake knows whether it is to run, plan or --unlock."""
    message = stale_lock.stale_lock_message(Path.cwd())
    if message:
        print(message, file=sys.stderr)


if workflow.is_main_process:
    atexit.register(say_if_a_killed_run_left_its_lock)


def check_gpus_at_start():
    """Before the first job of a real run: stop, writing nothing, when the GPUs asked for are not here
    (gpurepro/runs/devices.py); a dry run plans without it."""
    try:
        warnings = devices.check_at_start(PROFILE, config, CLUSTER)
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
    # cluster.enabled where, and only where, jobs go to a cluster (gpurepro/runs/devices.py)
    if problem := devices.executor_problem(
        IS_GPU, CLUSTER, workflow.non_local_exec
    ):
        stop_planning(problem)
    # --touch marks outputs up to date (their times and Snakemake's metadata) and runs no job: it replaces
    # no raw file, so neither the guard nor the estimate nor the fork server has work to do
    if not workflow.touch:
        # first: the GPUs asked for are here, before anything is written
        check_gpus_at_start()
        # then: nothing measured is replaced unless asked for (runplan.smk)
        guard_raw_data()
        print_estimate()
        # which GPU measures each claim group, round by round (gpurepro/placement/placer.py)
        PLACER.write_record(Path(RESULTS) / "placement.json")
        # kept beside the results as config/<hash>.yaml: `gpurepro compare` lists the keys two runs differ in
        provenance.record_config(config, Path(RESULTS), CONFIG_HASH)
        # the levels cool-downs end at are learned afresh by each run (telemetry/cooldown.py)
        forget_levels(Path(COOLDOWN_DIR))
        start_fork_server()
        # from the first job on, Ctrl-C ends the run in one line (gpurepro/runs/interrupt.py)
        interrupt.watch_interrupts(interrupt.console_handlers(snakemake_logger))


onerror:
    stop_fork_server()


wildcard_constraints:
    n=r"\d+",
    gpu=r"\d+|cpu",
    run=r"\d+",
    backend="torch|cublas|tiled",


def kernel_binary(wildcards):
    """The sgemm binary for the kernel backends; torch needs none."""
    return [] if wildcards.backend == "torch" else rules.build_kernels.output.sgemm


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
    measuring = registry.with_rounds(family).rule
    extra = [p["wildcards"] for p in extra_points(family, rounds)]
    pattern = getattr(getattr(rules, measuring).output, output)
    return [pattern.format(**point) for point in [*PLACER.points_of(measuring), *extra]]


def round_tables(family, round):
    """The tables a family's claims are judged on before extra round `round`."""
    tables = getattr(rules, registry.with_rounds(family).round_tables)
    return [path.format(family=family, round=round) for path in tables.output]


# Input functions of the repeated studies' rules (variability.smk, more_processes.smk), kept here as
# Snakemake's lint asks: the names they read are those files' own.
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


# Every measuring job samples DCGM's profiling metrics beside its trace where DCGM exists: not a rule
# output, and set in the environment so that turning it off does not rerun finished measurements.
os.environ.setdefault("GPUREPRO_DCGM_OUT", "auto")


# The options of every measuring `gpurepro` subcommand, and the end record of GPU work that is no
# measurement (gpurepro/runs/job_flags.py).
measurement_flags = functools.partial(
    job_flags.measurement_flags, config, DEVICE, COOLDOWN_DIR
)
end_record_flag = functools.partial(job_flags.end_record_flag, IS_GPU, COOLDOWN_DIR)


def raw_outputs(stem):
    """A raw table, its telemetry trace and both provenance sidecars, write-protected once made."""
    return {
        "table": protected(f"{stem}.csv"),
        "table_provenance": protected(f"{stem}.provenance.json"),
        "trace": protected(f"{stem}.telemetry.csv"),
        "trace_provenance": protected(f"{stem}.telemetry.provenance.json"),
    }


# Helpers of report.smk (the verdict, runtimes and combined tables; gpurepro/runs/result_files.py).
other_device_tables = functools.partial(
    result_files.other_device_tables,
    config["results_dir"],
    profiles.profile_names(Path(workflow.basedir) / "config" / "devices"),
    DEVICE,
)


def study_outputs(folder, suffix):
    """Every `<RESULTS>/<folder>/<name><suffix>` made by the rules included so far, by name."""
    paths = (str(path) for rule_ in workflow.rules for path in rule_.output)
    return result_files.named_outputs(paths, f"{RESULTS}/{folder}/", suffix)


def device_tables(wildcards):
    """This run's table (made by its rule) and the same table of every other profile's results folder."""
    made_here = wildcards.table in {*STUDY_TABLES, "runtimes"}
    own = [f"{RESULTS}/tables/{wildcards.table}.csv"] if made_here else []
    return own + other_device_tables(wildcards.table)
