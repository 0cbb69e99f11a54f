# The GPU power/performance variability study: FP32 SGEMM (N, reps and runs from the device profile's
# `variability` section) on every selected GPU of the node. With two or more GPUs here, each backend's run
# is one node job measuring every GPU at once (as a campaign measures a node: gpurepro/campaign/node.py);
# with one GPU, with noise, on the cpu profile or on a cluster, one job per GPU and run, pinned to its
# GPU. Runs follow each other after a cool-down. Then a tidy table, a spread summary (`variability`
# target) and a figure (`plot_variability` target).

VARIABILITY = PROFILE["variability"]
# cuBLAS as the original study, and our kernel; torch where the kernels cannot be built (cpu, no nvcc).
VARIABILITY_BACKENDS = KERNEL_BACKENDS or ["torch"]
VARIABILITY_NOISE = config["variability"]["noise"]
if VARIABILITY_NOISE != "none" and CLUSTER:
    stop_planning(
        "variability.noise needs every GPU of a node in one job, and cluster.enabled gives each job one "
        "GPU: run the noise study without the cluster profile, or set variability.noise=none"
    )
if VARIABILITY_NOISE != "none" and IS_GPU and len(GPUS) < 2:
    stop_planning(
        f"variability.noise={VARIABILITY_NOISE} runs on the GPUs not being measured, and {GPUS} is one "
        "GPU: select two or more (config gpus), or set variability.noise=none"
    )
# Without noise, on one machine with two or more GPUs, one node job a backend and run measures them all:
# their processes start together through a barrier, each GPU's start is recorded in its raw file's
# provenance (node_job) and in the job's record (<backend>_run<r>.node.json), and no GPU's run meets
# another study's job or another backend's run on its neighbours. The cluster profile keeps one GPU a job
# (each job its own allocation, wherever the scheduler puts it); `snakemake campaign` measures nodes there.
VARIABILITY_NODE = (
    VARIABILITY_NOISE == "none" and not CLUSTER and IS_GPU and len(GPUS) > 1
)
# Each per-GPU job holds its own GPU (the node job holds them all). With noise, the job measuring GPU g also runs the noise on every other
# GPU, so it holds all of them: the GPUs are then measured one at a time. Noise runs are filed apart (file
# name), never mixed with quiet ones.
VARIABILITY_RESOURCES = (
    PLACER.all_gpus_resources()
    if VARIABILITY_NOISE != "none" and IS_GPU
    else PLACER.per_gpu_resources()
)
VARIABILITY_RAW = f"{RESULTS}/variability/raw/{{backend}}_gpu{{gpu}}_run{{run}}" + (
    "" if VARIABILITY_NOISE == "none" else f"_noise-{VARIABILITY_NOISE}"
)
# With one GPU selected and no noise, run 1 of a variability point repeats the SGEMM study's point of the
# same backend, N, reps and warm-up on the same GPU to the letter (a quick run on one GPU: N=25536, 10
# reps). It is read from the SGEMM study's raw files instead of being measured twice (a minute of a
# quick run); with two or more GPUs each GPU's runs are the study's own.
VARIABILITY_SHARES_SGEMM = (
    VARIABILITY_NOISE == "none"
    and not CLUSTER
    and len(GPUS) == 1
    and VARIABILITY["n"] in SGEMM["sizes"]
    and VARIABILITY["reps"] == SGEMM["reps"]
)


# The node job's files: each GPU's raw table, trace and sidecars, as the per-GPU jobs name them, and the
# job's record (every GPU's identity and start; why a run failed) beside them.
VARIABILITY_NODE_STEM = f"{RESULTS}/variability/raw/{{backend}}_run{{run}}"
VARIABILITY_NODE_OUTPUTS = {
    f"{name}_gpu{gpu}": path
    for gpu in GPUS
    for name, path in raw_outputs(VARIABILITY_RAW.replace("{gpu}", str(gpu))).items()
}

if VARIABILITY_NODE:

    rule variability_node:
        input:
            **container_input(),
            binary=kernel_binary,
            previous=previous_variability_run,
        output:
            **VARIABILITY_NODE_OUTPUTS,
            record=protected(f"{VARIABILITY_NODE_STEM}.node.json"),
            job=protected(f"{VARIABILITY_NODE_STEM}.job.json"),
        log:
            f"{RESULTS}/logs/variability/{{backend}}_run{{run}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/variability/{{backend}}_run{{run}}.tsv"
        # every core, as a campaign's node job: no other job's load on the host while the GPUs are timed
        threads: PLACER.cores
        resources:
            **PLACER.all_gpus_resources(),
        params:
            n=VARIABILITY["n"],
            reps=VARIABILITY["reps"],
            gpus=",".join(map(str, GPUS)),
            out_dir=lambda wildcards, output: Path(output.record).parent,
            # one log per GPU of the run
            log_dir=lambda wildcards: f"{RESULTS}/logs/variability/{wildcards.backend}_run{wildcards.run}",
            # each GPU's process measures as a per-GPU variability job would
            sgemm=lambda wildcards, input: (
                f"{measurement_flags('variability')} --warmup {SGEMM['warmup']} {binary_flag(wildcards, input)}"
            ),
        # a run that fails on any GPU fails the job: Snakemake removes its files and measures the run
        # again on every GPU, as they are only alike measured together
        shell:
            container_exec_all_gpus()
            + "gpurepro campaign node {params.n} {params.reps} --runs 1 --first-run {wildcards.run} "
            "--backend {wildcards.backend} --gpus {params.gpus} --out-dir {params.out_dir} "
            "--record-prefix {wildcards.backend}_run{wildcards.run}. --log-dir {params.log_dir} "
            "--fail-if-unmeasured --sgemm-args '{params.sgemm}' > {log} 2>&1"

else:

    rule variability_run:
        input:
            **container_input(),
            binary=kernel_binary,
            previous=previous_variability_run,
            # the noise workload's images (none for synthetic data)
            data=DATASET_INPUT if VARIABILITY_NOISE != "none" else [],
        output:
            **raw_outputs(VARIABILITY_RAW),
        log:
            f"{RESULTS}/logs/variability/{{backend}}_gpu{{gpu}}_run{{run}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/variability/{{backend}}_gpu{{gpu}}_run{{run}}.tsv"
        threads: PLACER.measure_threads()
        resources:
            **VARIABILITY_RESOURCES,
        params:
            n=VARIABILITY["n"],
            reps=VARIABILITY["reps"],
            warmup=SGEMM["warmup"],
            binary=binary_flag,
            flags=measurement_flags("variability"),
            # the noise options (none unless config variability.noise asks): training as in train.smk
            noise=lambda wildcards: noise_flags(
                VARIABILITY_NOISE,
                wildcards.gpu,
                GPUS,
                IS_GPU,
                TRAIN_FLAGS,
                LOADER_WORKERS,
            ),
        # gpu_argument: the job's own GPU, or on a cluster GPU 0 of the job's own allocation. Under docker a
        # job gets its own GPU (GPU 0 inside), or with noise every GPU, numbered as on the host.
        shell:
            (
                container_exec_all_gpus()
                if VARIABILITY_NOISE != "none"
                else container_exec("{wildcards.gpu}")
            )
            + "gpurepro sgemm {params.n} {params.reps} "
            + (
                PLACER.gpu_argument
                if VARIABILITY_NOISE != "none"
                else PLACER.job_gpu_argument
            )
            + " --backend {wildcards.backend} "
            "{params.binary} --warmup {params.warmup} --run {wildcards.run} {params.flags} {params.noise} "
            "--out {output.table} --trace-out {output.trace} > {log} 2>&1"


VARIABILITY_TABLES = [
    variability_raw(backend, gpu, run)
    for backend in VARIABILITY_BACKENDS
    for gpu in GPUS or ["cpu"]
    for run in range(1, VARIABILITY["runs"] + 1)
]


rule variability:
    input:
        VARIABILITY_TABLES,
    output:
        reps=f"{RESULTS}/tables/variability_reps.csv",
        summary=f"{RESULTS}/tables/variability_summary.csv",
    log:
        f"{RESULTS}/logs/variability/aggregate.log",
    benchmark:
        f"{RESULTS}/benchmarks/variability/aggregate.tsv"
    localrule: True
    shell:
        "gpurepro aggregate variability {input} --out {output.reps} --summary {output.summary} > {log} 2>&1"


rule plot_variability:
    input:
        rules.variability.output.reps,
    output:
        report(
            f"{RESULTS}/plots/variability.png",
            caption="../report/variability.rst",
            category="Variability",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/variability/plot.log",
    benchmark:
        f"{RESULTS}/benchmarks/variability/plot.tsv"
    localrule: True
    shell:
        "gpurepro plot variability {input} --out {output} > {log} 2>&1"
