# The SGEMM study: FP32 matrix products per size N (device profile `sgemm.sizes`), timed per rep with
# telemetry, then one tidy table (`sgemm` target) and one figure (`plot_sgemm` target).

SGEMM = PROFILE["sgemm"]


rule sgemm_torch:
    output:
        **raw_outputs(f"{RESULTS}/sgemm/raw/torch_n{{n}}"),
    log:
        f"{RESULTS}/logs/sgemm/torch_n{{n}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/sgemm/torch_n{{n}}.tsv"
    threads: measure_threads()
    resources:
        **measure_resources(),
    params:
        reps=SGEMM["reps"],
        warmup=SGEMM["warmup"],
        gpu=MEASURE_GPU,
        flags=measurement_flags(),
    shell:
        "gpurepro sgemm {wildcards.n} {params.reps} {params.gpu} --backend torch "
        "--warmup {params.warmup} {params.flags} "
        "--out {output.table} --trace-out {output.trace} > {log} 2>&1"


rule sgemm:
    input:
        expand(rules.sgemm_torch.output.table, n=SGEMM["sizes"]),
    output:
        f"{RESULTS}/tables/sgemm.csv",
    log:
        f"{RESULTS}/logs/sgemm/aggregate.log",
    shell:
        "gpurepro aggregate sgemm {input} --out {output} > {log} 2>&1"


rule plot_sgemm:
    input:
        table=rules.sgemm.output,
        traces=expand(rules.sgemm_torch.output.trace, n=SGEMM["sizes"]),
    output:
        report(
            f"{RESULTS}/plots/sgemm.png",
            caption="../report/sgemm.rst",
            category="SGEMM",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/sgemm/plot.log",
    shell:
        "gpurepro plot sgemm {input.table} --traces {input.traces} --out {output} > {log} 2>&1"
