# The GPU power/performance variability study: FP32 SGEMM (N, reps and runs from the device profile's
# `variability` section) on every GPU of the node, one job per GPU and run, pinned to its GPU; jobs on
# different GPUs run at the same time, runs on one GPU follow each other after a cool-down. Then a tidy
# table, a spread summary (`variability` target) and a figure (`plot_variability` target).

VARIABILITY = PROFILE["variability"]
# cuBLAS as the original study, and our kernel; torch where the kernels cannot be built (cpu, no nvcc).
VARIABILITY_BACKENDS = KERNEL_BACKENDS or ["torch"]
VARIABILITY_NOISE = config["variability"]["noise"]
if VARIABILITY_NOISE != "none" and CLUSTER:
    raise WorkflowError(
        "variability.noise needs every GPU of a node in one job, and cluster.enabled gives each job one "
        "GPU: run the noise study without the cluster profile, or set variability.noise=none"
    )
if VARIABILITY_NOISE != "none" and IS_GPU and len(GPUS) < 2:
    raise WorkflowError(
        f"variability.noise={VARIABILITY_NOISE} runs on the GPUs not being measured, and {GPUS} is one "
        "GPU: select two or more (config gpus), or set variability.noise=none"
    )
# Without noise, each job holds its own GPU and the GPUs are measured side by side. With noise, the job
# measuring GPU g also runs the noise on every other GPU, so it holds all of them: the GPUs are then
# measured one at a time. Noise runs are filed apart (file name), never mixed with quiet ones.
VARIABILITY_RESOURCES = (
    {**{f"gpu_{g}": 1 for g in GPUS}, "gpu": len(GPUS)}
    if VARIABILITY_NOISE != "none" and IS_GPU
    else per_gpu_resources()
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
    threads: measure_threads()
    resources:
        **VARIABILITY_RESOURCES,
    params:
        n=VARIABILITY["n"],
        reps=VARIABILITY["reps"],
        warmup=SGEMM["warmup"],
        binary=binary_flag,
        flags=measurement_flags(),
        # the noise options (none unless config variability.noise asks): training as in train.smk
        noise=lambda wildcards: noise_flags(
            VARIABILITY_NOISE, wildcards.gpu, GPUS, IS_GPU, TRAIN_FLAGS, LOADER_WORKERS
        ),
    # GPU_ARGUMENT: the job's own GPU, or on a cluster GPU 0 of the job's own allocation. Under docker a
    # job gets its own GPU (GPU 0 inside), or with noise every GPU, numbered as on the host.
    shell:
        (
            container_exec_all_gpus()
            if VARIABILITY_NOISE != "none"
            else container_exec("{wildcards.gpu}")
        )
        + "gpurepro sgemm {params.n} {params.reps} "
        + (GPU_ARGUMENT if VARIABILITY_NOISE != "none" else JOB_GPU_ARGUMENT)
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
