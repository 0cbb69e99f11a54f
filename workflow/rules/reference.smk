# This GPU's reference rates (`reference` target): FP32 and FP16 matrix products, memory bandwidth and
# the power limit, measured in seconds on the first selected GPU, beside the SGEMM points whose rates they
# scale (gpurepro/placement/groups.py). The verdict scales an absolute claim made on another GPU by these
# against the paper GPU's rates in config/hardware/ (its README).

REFERENCE = PROFILE["reference"]


rule reference_run:
    input:
        **container_input(),
    output:
        table=protected(f"{RESULTS}/reference/raw/rates.csv"),
        table_provenance=protected(f"{RESULTS}/reference/raw/rates.provenance.json"),
    log:
        f"{RESULTS}/logs/reference/rates.log",
    benchmark:
        f"{RESULTS}/benchmarks/reference/rates.tsv"
    threads: placed_threads("reference_run")
    resources:
        **placed_resources("reference_run"),
    params:
        # the GPU of the SGEMM and reference group (common.smk placed_resources)
        **placed_params(),
        sizes=(
            f"--gemm-n {REFERENCE['gemm_n']} --copy-mib {REFERENCE['copy_mib']} "
            f"--reps {REFERENCE['reps']}"
        ),
    shell:
        placed_container_exec()
        + "gpurepro reference {params.gpu} --profile "
        + DEVICE
        + " {params.sizes} --seed "
        + str(config["seed"])
        + f" {end_record_flag()}"
        + " --out {output.table} > {log} 2>&1"


rule reference:
    input:
        rules.reference_run.output.table,
    output:
        f"{RESULTS}/tables/reference.csv",
    log:
        f"{RESULTS}/logs/reference/aggregate.log",
    benchmark:
        f"{RESULTS}/benchmarks/reference/aggregate.tsv"
    localrule: True
    shell:
        "gpurepro aggregate reference {input} --out {output} > {log} 2>&1"
