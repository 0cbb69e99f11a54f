# The data-parallel training study (`ddp`): ResNet-50 v1.5 training throughput (images/s) on 1, 2, 4, ...
# GPUs of one node, DistributedDataParallel over NCCL (gloo processes on the cpu profile), with the
# device profile's `train` settings and the images of config `data` (data.smk). One job per GPU count,
# holding all of its GPUs, plus one 1-GPU job per `train.compare_precisions` (e.g. tf32 beside AMP, for a
# published AMP-over-TF32 ratio); then images/s, speedup and scaling efficiency against one GPU of the
# same precision (`ddp` target) and a figure (`plot_ddp`). The same training is the variability study's
# noise workload: variability.smk takes its options from training.plan.noise_flags with TRAIN_FLAGS below.

from gpurepro.training.plan import (  # noqa: E402
    ddp_devices,
    ddp_gpu_claims,
    ddp_precisions,
    ddp_runs,
    noise_flags,
    train_flags,
    usable_gpu_counts,
    workers_per_process,
)

TRAIN = PROFILE["train"]
# On the cpu profile a count is a number of processes, which any machine can start.
try:
    DDP_PRECISION, DDP_COMPARED = ddp_precisions(TRAIN, PROFILE["precisions"])
    DDP_COUNTS, DDP_LEFT_OUT = usable_gpu_counts(
        TRAIN["gpu_counts"], len(GPUS) if IS_GPU else None
    )
except GpureproError as err:
    stop_planning(f"bad device profile config/devices/{DEVICE}.yaml: {err}")
if DDP_LEFT_OUT:
    print(
        f"gpurepro: ddp: GPU counts {DDP_LEFT_OUT} of profile {DEVICE} left out: {len(GPUS)} GPU(s) "
        "selected here",
        file=sys.stderr,
    )

# Synthetic images are made on the device at the profile's size; a real set comes at its own.
TRAIN_DATA = f"synthetic-{TRAIN['image_size']}px" if SYNTHETIC else DATA["source"]
TRAIN_FLAGS = train_flags(TRAIN, TRAIN["precision"], DATASET_FLAGS, SYNTHETIC)
DDP_RAW = f"{RESULTS}/ddp/raw/resnet50_{TRAIN_DATA}_{{precision}}_b{TRAIN['batch_size']}_{{ngpus}}gpu"
DDP_RUN_COUNTS, DDP_RUN_PRECISIONS = zip(
    *ddp_runs(DDP_COUNTS, DDP_PRECISION, DDP_COMPARED)
)


wildcard_constraints:
    ngpus=r"\d+",


# A k-GPU job holds all of its GPUs (gpu_<g> of each, k of `gpu`); on a cluster it asks for k GPUs of
# one node (the slurm plugin's `nodes`: --nodes=1), as the ranks talk over one node's links.
DDP_RESOURCES = (
    {}
    if not IS_GPU
    else (
        {
            **PLACER.cluster_resources(),
            "gpu": lambda wildcards: int(wildcards.ngpus),
            "nodes": 1,
        }
        if CLUSTER
        else ddp_gpu_claims(GPUS)
    )
)


rule train_ddp:
    input:
        DATASET_INPUT,
        **container_input(),
    output:
        table=protected(f"{DDP_RAW}.csv"),
        table_provenance=protected(f"{DDP_RAW}.provenance.json"),
    log:
        f"{RESULTS}/logs/ddp/{{ngpus}}gpu_{{precision}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/ddp/{{ngpus}}gpu_{{precision}}.tsv"
    wildcard_constraints:
        precision="|".join([DDP_PRECISION, *DDP_COMPARED]),
    threads: PLACER.measure_threads()
    resources:
        **DDP_RESOURCES,
    params:
        # In a Docker job, as in a cluster allocation, its GPUs are numbered from 0.
        devices=lambda wildcards: ddp_devices(
            int(wildcards.ngpus), GPUS, IS_GPU, CLUSTER or DOCKER_GPU_JOBS
        ),
        container=lambda wildcards: container_exec(GPUS[: int(wildcards.ngpus)]),
        workers=lambda wildcards: workers_per_process(
            LOADER_WORKERS, int(wildcards.ngpus)
        ),
        flags=lambda wildcards: train_flags(
            TRAIN, wildcards.precision, DATASET_FLAGS, SYNTHETIC
        )
        + f" --iterations {TRAIN['iterations']} --profile {DEVICE} {end_record_flag()}",
    # More than one process: the command starts torchrun itself, one rank per GPU.
    shell:
        "{params.container}gpurepro train resnet50 {params.devices} {params.flags} --workers {params.workers} "
        "--out {output.table} > {log} 2>&1"


rule ddp:
    input:
        expand(
            rules.train_ddp.output.table,
            zip,
            ngpus=DDP_RUN_COUNTS,
            precision=DDP_RUN_PRECISIONS,
        ),
    output:
        f"{RESULTS}/tables/ddp.csv",
    log:
        f"{RESULTS}/logs/ddp/aggregate.log",
    benchmark:
        f"{RESULTS}/benchmarks/ddp/aggregate.tsv"
    localrule: True
    shell:
        "gpurepro aggregate ddp {input} --out {output} > {log} 2>&1"


rule plot_ddp:
    input:
        table=rules.ddp.output[0],
        # the rates the verdict scales a published figure by, where it takes a measured one (reference.smk)
        reference=f"{RESULTS}/tables/reference.csv",
    output:
        report(
            f"{RESULTS}/plots/ddp.png",
            caption="../report/ddp.rst",
            category="Training",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/ddp/plot.log",
    benchmark:
        f"{RESULTS}/benchmarks/ddp/plot.tsv"
    localrule: True
    shell:
        "gpurepro plot ddp {input.table} --reference {input.reference} --out {output} > {log} 2>&1"
