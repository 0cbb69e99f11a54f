# Claim-affine placement (gpurepro/placement): which selected GPU measures each point of the inference,
# HFTA and SGEMM studies and the reference rates. The points one claim compares share a GPU within a
# round, and the groups of each round are packed onto the GPUs longest first (common.smk's
# placed_resources gives each job the `gpu_<g>` of its group's GPU). Computed once, when the first job's
# resources ask, from every planned point of the sweeps rather than from the jobs this invocation plans,
# so that a plan of one figure places its points as the whole run does.

from gpurepro.placement import packing as placement_packing  # noqa: E402
from gpurepro.runplan import durations, jobs  # noqa: E402


def measuring_points():
    """Every planned point of the placed rules, as (rule, wildcards), in their processes' rounds."""
    points = [
        (f"infer_{family}", point)
        for family, shape in INFERENCE_FAMILIES.items()
        for point in shape["runs"]
    ]
    points += [("hfta_point", point) for point in HFTA_RUNS]
    points += [
        ("sgemm_run", {"backend": backend, "n": n})
        for backend in SGEMM_BACKENDS
        for n in SGEMM["sizes"]
    ]
    # the reference job of the SGEMM group's GPU; under placement every GPU has one (reference.smk), each
    # held by its own GPU rather than placed, and the others' seconds are left out of the packing
    return points + [("reference_run", {})]


@functools.cache
def job_placement():
    """The placement of the measuring points on the selected GPUs, by the studies' models of their
    seconds (never earlier benchmark files, nor the GPUs' temperature now: the same config and GPUs
    give the same placement, so a run started again keeps each round's groups where they were).
    """
    points = measuring_points()
    settings = run_settings(start_temperature_c=None)
    seconds = [
        durations.modelled(
            jobs.PlannedJob(rule, {k: str(v) for k, v in point.items()}), settings
        )
        for rule, point in points
    ]
    return placement_packing.place(points, seconds, GPUS)


def write_placement():
    """`<results>/placement.json` at the start of a local GPU run: each claim group's GPU, round by round."""
    if IS_GPU and not CLUSTER:
        placement_packing.write(job_placement(), Path(RESULTS) / "placement.json")
