# Placement: which GPU, CPU slice, threads and resources each job has, and its command's container prefix,
# asked of one object (gpurepro/placement/placer.py) by every rule, on this machine and on a cluster
# alike. Included right after containers.smk: the rules read it as they are defined. The study files
# register the planned points of their placed rules (PLACER.plan); the points one claim compares (a
# claim group) share a GPU within a round, and the groups of each round are packed onto the GPUs longest
# first, once, when the first placed job's resources ask.

from gpurepro.placement import groups as placement_groups  # noqa: E402
from gpurepro.placement.placer import Placer  # noqa: E402
from gpurepro.runplan import durations, jobs  # noqa: E402

# every core Snakemake was given; without --cores nothing runs (--report, --lint): any count will do
try:
    PLACEMENT_CORES = workflow.cores
except WorkflowError:
    PLACEMENT_CORES = 1
PLACEMENT_GPU_MODEL = config["cluster"]["gpu_model"]


def modelled_seconds(points):
    """The studies' models of the points' seconds (never earlier benchmark files, nor the GPUs'
    temperature now: the same config and GPUs give the same placement, so a run started again keeps
    each round's groups where they were)."""
    settings = run_settings(start_temperature_c=None)
    return [
        durations.modelled(
            jobs.PlannedJob(rule, {k: str(v) for k, v in point.items()}), settings
        )
        for rule, point in points
    ]


PLACER = Placer(
    gpus=GPUS,
    gpu_profile=IS_GPU,
    cluster=CLUSTER,
    claim_groups=config["placement"] == "claim_groups",
    host_to_itself=frozenset(config["host_to_itself"]),
    cores=PLACEMENT_CORES,
    # a cluster GPU job asks for one GPU of the profile's model unless cluster.gpu_model says
    gpu_model=DEVICE if PLACEMENT_GPU_MODEL == "profile" else PLACEMENT_GPU_MODEL,
    containers=CONTAINERS,
    seconds=modelled_seconds,
)
# under placement, one reference job per GPU (reference.smk); the estimate says how GPUs share the time
PLACED = PLACER.placed
# the GPUs measuring side by side, whose CPU slices the jobs pin to (gpurepro/environment.py)
os.environ.update(PLACER.environment())


def claim_group(rule):
    """The `group:` of a placed rule's jobs: on a cluster, each job's claim group and round, which
    profiles/slurm runs as one allocation of one GPU that measures them one after another; None locally
    (Snakemake ignores groups in a local run, but a local dry-run would show them)."""
    if not CLUSTER:
        return None

    def named(wildcards):
        # the submitting process; in an allocation each job of the group runs on its own, one at a time
        if workflow.non_local_exec and workflow.is_main_process:
            problem = placement_groups.cluster_settings_problem(
                workflow.global_resources["_cores"].value,
                workflow.group_settings.group_components.get(
                    placement_groups.CLUSTER_GROUPS, 1
                ),
            )
            if problem:
                stop_planning(f"gpurepro: {problem}")
        name = PLACER.cluster_group(rule, wildcards)
        # so that the profile's group-components claim_groups=N reads every claim group's name
        workflow.parent_groupids[name] = placement_groups.CLUSTER_GROUPS
        return name

    return named
