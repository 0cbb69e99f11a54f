# The inference study: DeiT-T/S/B (timm) and BERT-B/L (transformers) per model, BERT sequence length,
# batch size, precision and mode (eager, torch.compile, CUDA graph replay), all from the device profile's
# `inference` section; latency with torch.utils.benchmark and energy per inference over a separate NVML
# energy window (config `inference`). Then one tidy table per family (`inference` target) and one figure
# each (`plot_deit`, `plot_bert`). A point that cannot run (out of memory, a compiler error) is filed as
# failed with its reason by `gpurepro infer`, so the sweep goes on.

import functools
import itertools

from gpurepro import inference as inference_study  # noqa: E402
from gpurepro import rounds  # noqa: E402

INFERENCE = PROFILE["inference"]
INFERENCE_RUN = config["inference"]
INFERENCE_RAW = f"{RESULTS}/inference/raw"

# DeiT points measured beside the sweep's product (e.g. quick runs' cudagraph point, whose latency beside
# eager's gives the host's share of eager batch-1 latency).
INFERENCE_EXTRA = INFERENCE.get("extra_points", [])


check_inference_points("precisions", INFERENCE["precisions"], INFERENCE["modes"])
check_inference_points(
    "extra_points",
    [point["precision"] for point in INFERENCE_EXTRA],
    [point["mode"] for point in INFERENCE_EXTRA],
)

# DeiT's points: every model at every batch, precision and mode, then the extra points not among them,
# as lists of equal length for expand(..., zip, ...).
DEIT_COMBINATIONS = list(
    itertools.product(
        INFERENCE["vit_models"],
        INFERENCE["batch_sizes"],
        INFERENCE["precisions"],
        INFERENCE["modes"],
    )
)
for point in INFERENCE_EXTRA:
    extra = (point["model"], point["batch"], point["precision"], point["mode"])
    if extra not in DEIT_COMBINATIONS:
        DEIT_COMBINATIONS.append(extra)


# Every point once per process it runs in, round by round (round r of every point before round r+1).
DEIT_RUNS = rounds.with_runs(
    (
        dict(zip(["vit_model", "batch", "precision", "mode"], combination))
        for combination in DEIT_COMBINATIONS
    ),
    functools.partial(rounds.inference_repeats, INFERENCE),
)
DEIT_POINTS = rounds.zipped(DEIT_RUNS)
# BERT's (model, sequence length) pairs: the profile's bert_points where it names them (the pairs the
# published claims use), else every model at every length; then each at every batch, precision and mode,
# as lists of equal length for expand(..., zip, ...).
BERT_PAIRS = [
    (point["model"], point["seq"]) for point in INFERENCE.get("bert_points", [])
] or list(itertools.product(INFERENCE["bert_models"], INFERENCE["bert_seq_lengths"]))
BERT_COMBINATIONS = list(
    itertools.product(
        BERT_PAIRS,
        INFERENCE["batch_sizes"],
        INFERENCE["precisions"],
        INFERENCE["modes"],
    )
)
BERT_RUNS = rounds.with_runs(
    (
        dict(
            bert_model=pair[0], seq=pair[1], batch=batch, precision=precision, mode=mode
        )
        for pair, batch, precision, mode in BERT_COMBINATIONS
    ),
    functools.partial(rounds.inference_repeats, INFERENCE),
)
BERT_POINTS = rounds.zipped(BERT_RUNS)


wildcard_constraints:
    vit_model="deit-[tsb]",
    bert_model="bert-[bl]",
    batch=r"\d+",
    seq=r"\d+",
    precision="fp32|tf32|fp16|bf16",
    mode="eager|compile|cudagraph",
    run=r"\d+",


# Seconds of a point's timed blocks and energy window: the profile's (a quick run's shorter ones) or the
# config's; the window never below the shortest NVML's counter is trusted over.
INFERENCE_TIMING = inference_study.timing(INFERENCE, config)


# Timing, energy-window and active-idle options of every `gpurepro infer` job (the other studies measure
# no active idle, so the flag is not among every study's measurement_flags).
INFERENCE_FLAGS = (
    f"--gpu {JOB_GPU} --min-run-time {INFERENCE_TIMING['min_run_time_s']} "
    f"--warmup {INFERENCE_RUN['warmup']} {measurement_flags(INFERENCE_TIMING['energy_window_s'], INFERENCE)} "
    f"--active-idle-seconds {config['telemetry']['active_idle_seconds']}"
)


DEIT_STEM = "{vit_model}_b{batch}_{precision}_{mode}_run{run}"
BERT_STEM = "{bert_model}_s{seq}_b{batch}_{precision}_{mode}_run{run}"


# Round r of a point waits for round r - 1 of every point of its family (gpurepro/rounds.py).
rule infer_deit:
    input:
        **container_input(),
        previous_round=lambda w: rounds.previous_round(
            f"{INFERENCE_RAW}/deit/{DEIT_STEM}.csv", DEIT_RUNS, w.run
        ),
    output:
        **raw_outputs(f"{INFERENCE_RAW}/deit/{DEIT_STEM}"),
    log:
        f"{RESULTS}/logs/inference/deit/{DEIT_STEM}.log",
    benchmark:
        f"{RESULTS}/benchmarks/inference/deit/{DEIT_STEM}.tsv"
    threads: host_bound_threads()
    resources:
        **measure_resources(),
    params:
        flags=INFERENCE_FLAGS,
    shell:
        container_exec(MEASURE_GPU)
        + "gpurepro infer vit -m {wildcards.vit_model} -b {wildcards.batch} --precision {wildcards.precision} "
        "--mode {wildcards.mode} --run {wildcards.run} {params.flags} --out {output.table} --trace-out {output.trace} > {log} 2>&1"


rule infer_bert:
    input:
        **container_input(),
        previous_round=lambda w: rounds.previous_round(
            f"{INFERENCE_RAW}/bert/{BERT_STEM}.csv", BERT_RUNS, w.run
        ),
    output:
        **raw_outputs(f"{INFERENCE_RAW}/bert/{BERT_STEM}"),
    log:
        f"{RESULTS}/logs/inference/bert/{BERT_STEM}.log",
    benchmark:
        f"{RESULTS}/benchmarks/inference/bert/{BERT_STEM}.tsv"
    threads: host_bound_threads()
    resources:
        **measure_resources(),
    params:
        flags=INFERENCE_FLAGS,
    shell:
        container_exec(MEASURE_GPU)
        + "gpurepro infer bert -m {wildcards.bert_model} -s {wildcards.seq} -b {wildcards.batch} "
        "--precision {wildcards.precision} --mode {wildcards.mode} --run {wildcards.run} {params.flags} "
        "--out {output.table} --trace-out {output.trace} > {log} 2>&1"


# The tables read each raw file's trace beside it (throttle reasons of the energy window), so traces
# are inputs too.
rule inference_deit:
    input:
        tables=expand(rules.infer_deit.output.table, zip, **DEIT_POINTS),
        traces=expand(rules.infer_deit.output.trace, zip, **DEIT_POINTS),
    output:
        table=f"{RESULTS}/tables/inference_deit.csv",
        processes=f"{RESULTS}/tables/inference_deit_processes.csv",
    log:
        f"{RESULTS}/logs/inference/aggregate_deit.log",
    benchmark:
        f"{RESULTS}/benchmarks/inference/aggregate_deit.tsv"
    localrule: True
    shell:
        "gpurepro aggregate inference {input.tables} --out {output.table} "
        "--processes {output.processes} > {log} 2>&1"


rule inference_bert:
    input:
        tables=expand(rules.infer_bert.output.table, zip, **BERT_POINTS),
        traces=expand(rules.infer_bert.output.trace, zip, **BERT_POINTS),
    output:
        table=f"{RESULTS}/tables/inference_bert.csv",
        processes=f"{RESULTS}/tables/inference_bert_processes.csv",
    log:
        f"{RESULTS}/logs/inference/aggregate_bert.log",
    benchmark:
        f"{RESULTS}/benchmarks/inference/aggregate_bert.tsv"
    localrule: True
    shell:
        "gpurepro aggregate inference {input.tables} --out {output.table} "
        "--processes {output.processes} > {log} 2>&1"


rule inference:
    input:
        rules.inference_deit.output,
        rules.inference_bert.output,
    localrule: True


rule plot_deit:
    input:
        rules.inference_deit.output.table,
    output:
        report(
            f"{RESULTS}/plots/deit.png",
            caption="../report/deit.rst",
            category="Inference",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/inference/plot_deit.log",
    benchmark:
        f"{RESULTS}/benchmarks/inference/plot_deit.tsv"
    localrule: True
    shell:
        "gpurepro plot deit {input} --out {output} > {log} 2>&1"


rule plot_bert:
    input:
        rules.inference_bert.output.table,
    output:
        report(
            f"{RESULTS}/plots/bert.png",
            caption="../report/bert.rst",
            category="Inference",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/inference/plot_bert.log",
    benchmark:
        f"{RESULTS}/benchmarks/inference/plot_bert.tsv"
    localrule: True
    shell:
        "gpurepro plot bert {input} --out {output} > {log} 2>&1"
