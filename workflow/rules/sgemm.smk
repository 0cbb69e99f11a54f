# The SGEMM study: FP32 matrix products per size N (device profile `sgemm.sizes`) and backend (torch,
# and cuBLAS and our tiled CUDA kernel where nvcc exists), timed per rep with telemetry, then one tidy
# table (`sgemm` target) and one figure (`plot_sgemm` target).

SGEMM = PROFILE["sgemm"]
# The profile's backends (a quick run's: the kernels), of those this machine can build; torch where it
# can build none, so the study always measures something.
SGEMM_BACKENDS = [
    backend
    for backend in SGEMM.get("backends", ["torch", *KERNEL_BACKENDS])
    if backend == "torch" or backend in KERNEL_BACKENDS
] or ["torch"]
# its points are placed by claim group, with the reference rates (reference.smk)
PLACER.plan(
    "sgemm_run",
    [
        {"backend": backend, "n": n}
        for backend in SGEMM_BACKENDS
        for n in SGEMM["sizes"]
    ],
)


rule sgemm_run:
    input:
        **container_input(),
        binary=kernel_binary,
    output:
        **raw_outputs(f"{RESULTS}/sgemm/raw/{{backend}}_n{{n}}"),
    log:
        f"{RESULTS}/logs/sgemm/{{backend}}_n{{n}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/sgemm/{{backend}}_n{{n}}.tsv"
    # on a cluster, one allocation with the reference rates (placement.smk claim_group)
    group:
        claim_group("sgemm_run")
    threads: PLACER.threads("sgemm_run")
    resources:
        **PLACER.resources("sgemm_run"),
    params:
        # the GPU of the SGEMM and reference group (gpurepro/placement/placer.py)
        **PLACER.params(),
        reps=SGEMM["reps"],
        warmup=SGEMM["warmup"],
        binary=binary_flag,
        flags=PLACER.flags("sgemm_run", measurement_flags("sgemm")),
    shell:
        PLACER.container_prefix()
        + "gpurepro sgemm {wildcards.n} {params.reps} {params.gpu} --backend {wildcards.backend} "
        "{params.binary} --warmup {params.warmup} {params.flags} "
        "--out {output.table} --trace-out {output.trace} > {log} 2>&1"


rule sgemm:
    input:
        expand(rules.sgemm_run.output.table, backend=SGEMM_BACKENDS, n=SGEMM["sizes"]),
    output:
        f"{RESULTS}/tables/sgemm.csv",
    log:
        f"{RESULTS}/logs/sgemm/aggregate.log",
    benchmark:
        f"{RESULTS}/benchmarks/sgemm/aggregate.tsv"
    localrule: True
    shell:
        "gpurepro aggregate sgemm {input} --out {output} > {log} 2>&1"


rule plot_sgemm:
    input:
        table=rules.sgemm.output,
        traces=expand(
            rules.sgemm_run.output.trace, backend=SGEMM_BACKENDS, n=SGEMM["sizes"]
        ),
    output:
        report(
            f"{RESULTS}/plots/sgemm.png",
            caption="../report/sgemm.rst",
            category="SGEMM",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/sgemm/plot.log",
    benchmark:
        f"{RESULTS}/benchmarks/sgemm/plot.tsv"
    localrule: True
    shell:
        "gpurepro plot sgemm {input.table} --traces {input.traces} --out {output} > {log} 2>&1"
