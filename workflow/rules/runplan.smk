# How long the planned jobs will take, said before they start: a run prints it from onstart (common.smk),
# a dry-run at its end (Snakemake calls no handler in a dry-run). Only the jobs this invocation planned
# count: `snakemake plot_bert -n` estimates the BERT points, not the whole pipeline.

import atexit

from gpurepro.runplan import durations, estimate, jobs, replacements  # noqa: E402
from gpurepro.runplan import damaged  # noqa: E402


def planned_cores():
    """The cores Snakemake was given; a dry-run without --cores is estimated for every core here."""
    try:
        return workflow.cores
    except WorkflowError:
        return os.cpu_count() or 1


def cluster_jobs():
    """On a cluster, how many jobs Snakemake keeps submitted at once (the slurm profile's `jobs:`),
    which sets the wall time there; None here (a dry-run planned without the profile: one).
    """
    return (workflow.nodes or 1) if CLUSTER else None


def resource_capacity():
    """The countable resources the run was given (gpu_0=1, ..., gpu=8 from profiles/default)."""
    values = {
        name: getattr(value, "value", value)
        for name, value in workflow.global_resources.items()
    }
    return {
        name: value
        for name, value in values.items()
        if not name.startswith("_") and isinstance(value, int)
    }


def coolest_gpu_temperature():
    """The coolest selected GPU's temperature now (None on a cluster or without NVML): the idle
    temperature the run's cool-downs will return to, which sets how long they take."""
    if CLUSTER or not IS_GPU:
        return None
    readings = [g.temperature_c for g in detected_gpus() if g.temperature_c is not None]
    return float(min(readings)) if readings else None


def run_settings(start_temperature_c):
    """What the studies' models read of this run (runplan/durations.py), for GPUs starting at
    `start_temperature_c` (None: unknown)."""
    return durations.RunSettings(
        config=config,
        profile=PROFILE,
        fork_server=fork_server_wanted(),
        gpu=IS_GPU,
        fp32_tflops=51.0 if IS_GPU else 0.5,
        start_temperature_c=start_temperature_c,
        cooldown_scale=PROFILE.get("cooldown_scale", 1.0),
    )


def print_estimate():
    """The estimate of the jobs in Snakemake's plan, on stderr."""
    settings = run_settings(coolest_gpu_temperature())
    cores = planned_cores()
    planned = jobs.from_dag(workflow.dag)
    found = estimate.estimate(
        planned,
        settings,
        Path(config["results_dir"]),
        cores,
        {} if CLUSTER else resource_capacity(),
        cluster_jobs(),
    )
    # one entry per family of points whose checkpoint of more processes is planned (more_processes.smk):
    # its study. A target that stops at raw files (a piece of the full plan) plans none: no extra round.
    checked = {
        job.wildcards.get("family") for job in planned if job.rule == "more_processes"
    }
    extra = estimate.ExtraProcesses(
        tuple(
            r.study for r in registry.RECORDS if r.extra_rounds and r.family in checked
        ),
        MORE["extra"],
        MORE_ROUNDS,
    )
    print(
        estimate.describe(
            found, cores, settings.start_temperature_c, extra, placed=PLACED
        ),
        file=sys.stderr,
    )


def guard_raw_data():
    """Before the first job (onstart): stop a run that would replace measured raw files without being
    asked to, or read raw files that cannot be read (gpurepro/runplan/damaged.py), and move aside those
    it was asked to replace (gpurepro/runplan/replacements.py).
    """
    found = replacements.from_dag(workflow.dag)
    refused = replacements.refusal(found, Path(RESULTS), config)
    if refused:
        stop_planning(refused)
    unreadable = damaged.refusal(workflow.dag)
    if unreadable:
        stop_planning(unreadable)
    kept = replacements.set_aside(found, Path(RESULTS))
    if kept:
        print(
            f"gpurepro: the raw files of the points asked to run again were moved to {kept}",
            file=sys.stderr,
        )


def warn_of_replacements_after_dry_run():
    """A dry-run says what the real run would do with raw files already measured."""
    found = replacements.from_dag(workflow.dag)
    message = replacements.refusal(found, Path(RESULTS), config, dry_run=True)
    if message:
        print(message, file=sys.stderr)
    moved = sum(len(r.files) for r in found if r.requested)
    if moved:
        print(
            f"gpurepro: a run would move {moved} raw files of points asked to run again to "
            f"{replacements.archive_root(Path(RESULTS))}/<time>/",
            file=sys.stderr,
        )


def print_estimate_after_dry_run():
    if (
        workflow.dryrun
        and not PLANNING_STOPPED
        and getattr(workflow, "dag", None) is not None
    ):
        warn_of_replacements_after_dry_run()
        print_estimate()


atexit.register(print_estimate_after_dry_run)
