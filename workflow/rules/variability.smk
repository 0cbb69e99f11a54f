# The GPU power/performance variability study: FP32 SGEMM (N, reps and runs from the device profile's
# `variability` section) on every GPU of the node, one job per GPU and run, pinned to its GPU; jobs on
# different GPUs run at the same time, runs on one GPU follow each other after a cool-down. Then a tidy
# table, a spread summary (`variability` target) and a figure (`plot_variability` target).

VARIABILITY = PROFILE["variability"]
# cuBLAS as the original study, and our kernel; torch where the kernels cannot be built (cpu, no nvcc).
VARIABILITY_BACKENDS = KERNEL_BACKENDS or ["torch"]
VARIABILITY_RAW = f"{RESULTS}/variability/raw/{{backend}}_gpu{{gpu}}_run{{run}}"


rule variability_run:
    input:
        binary=kernel_binary,
        previous=previous_run(f"{VARIABILITY_RAW}.csv"),
    output:
        **raw_outputs(VARIABILITY_RAW),
    log:
        f"{RESULTS}/logs/variability/{{backend}}_gpu{{gpu}}_run{{run}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/variability/{{backend}}_gpu{{gpu}}_run{{run}}.tsv"
    threads: measure_threads()
    resources:
        **per_gpu_resources(),
    params:
        n=VARIABILITY["n"],
        reps=VARIABILITY["reps"],
        warmup=SGEMM["warmup"],
        binary=binary_flag,
        flags=measurement_flags(),
    # GPU_ARGUMENT: the job's own GPU, or on a cluster GPU 0 of the job's own allocation.
    shell:
        "gpurepro sgemm {params.n} {params.reps} "
        + GPU_ARGUMENT
        + " --backend {wildcards.backend} "
        "{params.binary} --warmup {params.warmup} --run {wildcards.run} {params.flags} "
        "--out {output.table} --trace-out {output.trace} > {log} 2>&1"


VARIABILITY_TABLES = expand(
    rules.variability_run.output.table,
    backend=VARIABILITY_BACKENDS,
    gpu=GPUS or ["cpu"],
    run=range(1, VARIABILITY["runs"] + 1),
)


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
