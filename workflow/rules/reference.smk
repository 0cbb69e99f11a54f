# This GPU's reference rates (`reference` target): FP32 and FP16 matrix products, memory bandwidth and
# the power limit, measured in seconds on the first selected GPU, beside the SGEMM points whose rates they
# scale (gpurepro/placement/groups.py). The verdict scales an absolute claim made on another GPU by these
# against the paper GPU's rates in config/hardware/ (its README).
#
# Under claim-group placement (PLACED: two or more GPUs) every selected GPU measures its own rates, one
# job each ({gpu}), since cards of one model differ (1.9% in SGEMM rate across four H100s) and the verdict
# scales a claim by the rates of the card its points ran on. Otherwise one job, planned exactly as before
# placement existed (same output, command and params), so finished results are not measured again.

REFERENCE = PROFILE["reference"]
REFERENCE_RAW = f"{RESULTS}/reference/raw/rates" + ("_gpu{gpu}" if PLACED else "")
REFERENCE_LOG = "rates" + ("_gpu{gpu}" if PLACED else "")
# the job of the SGEMM group's GPU; under placement every GPU has one, each held by its own GPU rather
# than placed, and the others' seconds are left out of the packing
PLACER.plan("reference_run", [{}])


rule reference_run:
    input:
        **container_input(),
    output:
        table=protected(f"{REFERENCE_RAW}.csv"),
        table_provenance=protected(f"{REFERENCE_RAW}.provenance.json"),
    log:
        f"{RESULTS}/logs/reference/{REFERENCE_LOG}.log",
    benchmark:
        f"{RESULTS}/benchmarks/reference/{REFERENCE_LOG}.tsv"
    # on a cluster, one allocation with the SGEMM points (placement.smk claim_group)
    group:
        claim_group("reference_run")
    threads: PLACER.threads("reference_run")
    resources:
        **PLACER.own_gpu_resources("reference_run"),
    params:
        # the GPU of the SGEMM and reference group, or under placement the job's own GPU
        # (gpurepro/placement/placer.py)
        **PLACER.own_gpu_params(),
        sizes=(
            f"--gemm-n {REFERENCE['gemm_n']} --copy-mib {REFERENCE['copy_mib']} "
            f"--reps {REFERENCE['reps']}"
        ),
    shell:
        PLACER.container_prefix()
        + "gpurepro reference {params.gpu} --profile "
        + DEVICE
        + " {params.sizes} --seed "
        + str(config["seed"])
        + f" {end_record_flag()}"
        + " --out {output.table} > {log} 2>&1"


rule reference:
    input:
        # the raw rates: one file per selected GPU under placement, else the one
        (
            expand(rules.reference_run.output.table, gpu=GPUS)
            if PLACED
            else rules.reference_run.output.table
        ),
    output:
        f"{RESULTS}/tables/reference.csv",
    log:
        f"{RESULTS}/logs/reference/aggregate.log",
    benchmark:
        f"{RESULTS}/benchmarks/reference/aggregate.tsv"
    localrule: True
    shell:
        "gpurepro aggregate reference {input} --out {output} > {log} 2>&1"
