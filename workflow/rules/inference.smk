# The inference study: DeiT-T/S/B (timm) and BERT-B/L (transformers) per model, BERT sequence length,
# batch size, precision and mode (eager, torch.compile, CUDA graph replay), all from the device profile's
# `inference` section; latency with torch.utils.benchmark and energy per inference over a separate NVML
# energy window (config `inference`). Then one tidy table per family (`inference` target) and one figure
# each (`plot_deit`, `plot_bert`). A point that cannot run (out of memory, a compiler error) is filed as
# failed with its reason by `gpurepro infer`, so the sweep goes on.

import itertools

from gpurepro import inference as inference_study  # noqa: E402
from gpurepro import rounds  # noqa: E402
from gpurepro.more_processes import purpose  # noqa: E402
from gpurepro.runs.job_flags import inference_points_problem  # noqa: E402

INFERENCE = PROFILE["inference"]
INFERENCE_RUN = config["inference"]
INFERENCE_RAW = f"{RESULTS}/inference/raw"

# DeiT points measured beside the sweep's product (e.g. quick runs' cudagraph point, whose latency beside
# eager's gives the host's share of eager batch-1 latency).
INFERENCE_EXTRA = INFERENCE.get("extra_points", [])


# A point that asks for a precision the GPU lacks, or for cudagraph where there is no GPU, stops the plan.
for key, precisions, modes in (
    ("precisions", INFERENCE["precisions"], INFERENCE["modes"]),
    (
        "extra_points",
        [point["precision"] for point in INFERENCE_EXTRA],
        [point["mode"] for point in INFERENCE_EXTRA],
    ),
):
    if problem := inference_points_problem(PROFILE, DEVICE, key, precisions, modes):
        stop_planning(problem)

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


# Every point once per process it runs in, round by round (round r of every point before round r+1): 3 for
# a point a claim reads, 2 or 1 for one only a figure shows (gpurepro/more_processes/purpose.py).
DEIT_RUNS = rounds.with_runs(
    (
        dict(zip(["vit_model", "batch", "precision", "mode"], combination))
        for combination in DEIT_COMBINATIONS
    ),
    purpose.counter("deit", INFERENCE),
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
    purpose.counter("bert", INFERENCE),
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
# no active idle, so the flag is not among every study's measurement_flags); its GPU is the job's own
# (params.gpu: PLACER.params()).
INFERENCE_FLAGS = (
    f"--min-run-time {INFERENCE_TIMING['min_run_time_s']} "
    f"--warmup {INFERENCE_RUN['warmup']} {measurement_flags('inference', INFERENCE_TIMING['energy_window_s'], INFERENCE)} "
    f"--active-idle-seconds {config['telemetry']['active_idle_seconds']}"
)


# What sets a family's rules apart: the name of its raw files, its points round by round, and how
# `gpurepro infer` names its model. Every other line of its rules is the same for DeiT and BERT.
INFERENCE_FAMILIES = {
    "deit": {
        "stem": "{vit_model}_b{batch}_{precision}_{mode}_run{run}",
        "runs": DEIT_RUNS,
        "points": DEIT_POINTS,
        "model_args": "vit -m {wildcards.vit_model}",
    },
    "bert": {
        "stem": "{bert_model}_s{seq}_b{batch}_{precision}_{mode}_run{run}",
        "runs": BERT_RUNS,
        "points": BERT_POINTS,
        "model_args": "bert -m {wildcards.bert_model} -s {wildcards.seq}",
    },
}


# The points of each family are placed by claim group (gpurepro/placement/placer.py).
for family, shape in INFERENCE_FAMILIES.items():
    PLACER.plan(f"infer_{family}", shape["runs"])


# Each stage is one rule per family: infer_<family> measures one point in one process,
# inference_<family> gathers the family's tidy tables and plot_<family> draws its figure.
for family, shape in INFERENCE_FAMILIES.items():

    rule:
        name:
            f"infer_{family}"
        input:
            **container_input(),
            # round r of a point waits for round r - 1 of every point of its family and for the point
            # before it in its claim group's seeded order of round r (round_order.py)
            previous_round=lambda wildcards, family=family, shape=shape: round_order.waits_for(
                f"infer_{family}",
                f"{INFERENCE_RAW}/{family}/{shape['stem']}.csv",
                shape["runs"],
                wildcards,
                INFERENCE,
                config["seed"],
            ),
        output:
            **raw_outputs(f"{INFERENCE_RAW}/{family}/{shape['stem']}"),
        log:
            f"{RESULTS}/logs/inference/{family}/{shape['stem']}.log",
        benchmark:
            f"{RESULTS}/benchmarks/inference/{family}/{shape['stem']}.tsv"
        # on a cluster, one allocation per claim group and round (placement.smk claim_group)
        group:
            claim_group(f"infer_{family}")
        threads: PLACER.threads(f"infer_{family}")
        resources:
            **PLACER.resources(f"infer_{family}"),
        params:
            # the GPU of the point's claim group in its round (gpurepro/placement/placer.py)
            **PLACER.params(),
            flags=PLACER.flags(f"infer_{family}", INFERENCE_FLAGS),
            # bound now: a shell command is formatted as the job runs, when the loop's `shape` is the
            # last family's
            model=lambda wildcards, model_args=shape["model_args"]: model_args.format(
                wildcards=wildcards
            ),
        shell:
            PLACER.container_prefix()
            + "gpurepro infer {params.model} "
            + "-b {wildcards.batch} --precision {wildcards.precision} --mode {wildcards.mode} "
            "--run {wildcards.run} --gpu {params.gpu} {params.flags} --out {output.table} "
            "--trace-out {output.trace} "
            "> {log} 2>&1"


# The tables read each raw file's trace beside it (throttle reasons of the energy window), so traces
# are inputs too.
for family, shape in INFERENCE_FAMILIES.items():

    rule:
        name:
            f"inference_{family}"
        input:
            # the family's own rounds and any extra ones (more_processes.smk)
            tables=lambda w, family=family: family_raw(family, MORE_ROUNDS),
            traces=lambda w, family=family: family_raw(family, MORE_ROUNDS, "trace"),
        output:
            table=f"{RESULTS}/tables/inference_{family}.csv",
            processes=f"{RESULTS}/tables/inference_{family}_processes.csv",
        log:
            f"{RESULTS}/logs/inference/aggregate_{family}.log",
        benchmark:
            f"{RESULTS}/benchmarks/inference/aggregate_{family}.tsv"
        localrule: True
        shell:
            "gpurepro aggregate inference {input.tables} --out {output.table} "
            "--processes {output.processes} > {log} 2>&1"


rule inference:
    input:
        rules.inference_deit.output,
        rules.inference_bert.output,
    localrule: True


for family in INFERENCE_FAMILIES:

    rule:
        name:
            f"plot_{family}"
        input:
            getattr(rules, f"inference_{family}").output.table,
        output:
            report(
                f"{RESULTS}/plots/{family}.png",
                caption=f"../report/{family}.rst",
                category="Inference",
                subcategory=DEVICE,
            ),
        log:
            f"{RESULTS}/logs/inference/plot_{family}.log",
        benchmark:
            f"{RESULTS}/benchmarks/inference/plot_{family}.tsv"
        localrule: True
        params:
            # bound now, as infer_<family>'s model (above)
            family=family,
        shell:
            "gpurepro plot {params.family} {input} --out {output} > {log} 2>&1"
