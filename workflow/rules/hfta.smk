# The HFTA study: B copies of a workload (ResNet-18, the transformer encoder, the MLP) trained one after
# another (serial), as B processes on the GPU (concurrent), as B processes under an MPS daemon the job
# starts and stops (mps), and horizontally fused into one model (hfta), per precision, B and repeat, all
# from the device profile's `hfta` section; how they train comes from config `hfta`. Each mode runs with
# torch's stock eager step and, where config hfta.graphs allows it, with each step replayed as one CUDA
# graph (the `step` wildcard: stock | graphed), side by side. One job per point (`gpurepro hfta`); a
# point that runs out of memory or fails still writes its raw file with its status and reason (mps
# without nvidia-cuda-mps-control: skipped), so the `hfta` tables never miss an input.
# Then `hfta` (tables/hfta.csv, normalised throughput; tables/hfta_speedup.csv) and `plot_hfta`.


from gpurepro import hfta_study  # noqa: E402
from gpurepro.hfta_study import sweep as hfta_sweep  # noqa: E402
from gpurepro import rounds  # noqa: E402
from gpurepro.more_processes import purpose  # noqa: E402

HFTA = PROFILE["hfta"]
HFTA_RUN = config["hfta"]
HFTA_RAW = f"{RESULTS}/hfta/raw"

HFTA_UNSUPPORTED = sorted(set(HFTA["precisions"]) - set(PROFILE["precisions"]))
if HFTA_UNSUPPORTED:
    stop_planning(
        f"bad device profile config/devices/{DEVICE}.yaml: key hfta.precisions: {HFTA_UNSUPPORTED} "
        f"not in the profile's precisions {PROFILE['precisions']}"
    )
if not IS_GPU and "mps" in HFTA["modes"]:
    stop_planning(
        f"bad device profile config/devices/{DEVICE}.yaml: key hfta.modes: mps shares a GPU between "
        "processes and needs one"
    )

# auto: graphed beside stock wherever a GPU is and the optimizer's step can be captured (SGD).
HFTA_GRAPHS = {True: "on", False: "off"}.get(HFTA_RUN["graphs"], HFTA_RUN["graphs"])
if HFTA_GRAPHS == "on" and not IS_GPU:
    stop_planning(
        f"config key hfta.graphs: 'on' replays CUDA graphs and needs a GPU profile, not {DEVICE}; use auto or off"
    )
if HFTA_GRAPHS == "on" and HFTA_RUN["optimizer"] != "sgd":
    stop_planning(
        f"config key hfta.graphs: 'on' captures the fused SGD step; hfta.optimizer is {HFTA_RUN['optimizer']}, "
        "use sgd, or graphs auto or off"
    )
HFTA_STEPS = ["stock"]
if IS_GPU and HFTA_GRAPHS != "off" and HFTA.get("graphed", True):
    if HFTA_RUN["optimizer"] == "sgd":
        HFTA_STEPS.append("graphed")
    else:
        print(
            f"gpurepro: hfta.graphs auto: {HFTA_RUN['optimizer']} steps cannot be graphed; stock steps only",
            file=sys.stderr,
        )

# Compiled steps (torch.compile) beside stock, like graphed ones: auto on a GPU, where the profile runs
# the project's step kinds (quick runs measure stock steps only); on insists.
HFTA_COMPILE = {True: "on", False: "off"}.get(HFTA_RUN["compile"], HFTA_RUN["compile"])
if HFTA_COMPILE == "on" or (
    HFTA_COMPILE == "auto" and IS_GPU and HFTA.get("graphed", True)
):
    HFTA_STEPS.append("compiled")

HFTA_POINTS = dict(
    net=HFTA["workloads"],
    step=HFTA_STEPS,
    scheme=HFTA["modes"],
    precision=HFTA["precisions"],
    b=HFTA["b_values"],
    run=range(1, rounds.most_repeats(HFTA) + 1),
)
# Points whose answer another point gives are left out (gpurepro/hfta_study/sweep.py): serial runs at
# serial_b_values only (the smallest B unless the profile says otherwise; they may lie outside
# b_values), concurrent and MPS not at
# B=1, graphed steps once (the repeats are for the stock comparisons the claims judge).
HFTA_SERIAL_B = HFTA.get("serial_b_values", [min(HFTA["b_values"])])


# Every planned point with its run (3 processes where a claim reads it, 2 or 1 where only a figure shows
# it: gpurepro/more_processes/purpose.py); round r of a point waits for round r - 1 of all of them.
HFTA_RUNS = list(
    hfta_sweep.points(HFTA_POINTS, HFTA_SERIAL_B, purpose.counter("hfta", HFTA))
)
HFTA_STEM = "{net}/{step}/{scheme}_{precision}_b{b}_run{run}"
# placed by claim group (gpurepro/placement/placer.py)
PLACER.plan("hfta_point", HFTA_RUNS)

# ResNet-18 reads real Tiny-ImageNet batches when data.source is tiny-imagenet; everything else trains
# on synthetic batches.
HFTA_REAL_DATA = DATA["source"] == "tiny-imagenet"
HFTA_REAL_FLAGS = (
    f"--data-source tiny-imagenet --data-root {DATASET_ROOTS['tiny-imagenet']}"
)


# Like every measuring job, each samples DCGM beside its telemetry where DCGM exists (common.smk); its
# GPU is the job's own (params.gpu: PLACER.params()).
HFTA_FLAGS = (
    f"--batch-size {HFTA['batch_size']} --steps {HFTA['steps']} "
    f"--warmup {HFTA['warmup']} --image-size {HFTA['image_size']} --seq-len {HFTA['seq_len']} "
    f"--optimizer {HFTA_RUN['optimizer']} --lr {HFTA_RUN['lr']} --data-batches {HFTA_RUN['data_batches']} "
    f"--min-timed-s {hfta_study.min_timed_s(HFTA, config)} "
    f"--dropped-steps {HFTA_RUN['dropped_steps']} {measurement_flags('hfta', section=HFTA)}"
)


rule hfta_point:
    input:
        lambda w: DATASET_INPUT if HFTA_REAL_DATA and w.net == "resnet18" else [],
        **container_input(),
        previous_round=lambda w: round_order.waits_for(
            "hfta_point",
            f"{HFTA_RAW}/{HFTA_STEM}.csv",
            HFTA_RUNS,
            w,
            HFTA,
            config["seed"],
        ),
    output:
        **raw_outputs(f"{HFTA_RAW}/{HFTA_STEM}"),
    log:
        f"{RESULTS}/logs/hfta/{HFTA_STEM}.log",
    benchmark:
        f"{RESULTS}/benchmarks/hfta/{HFTA_STEM}.tsv"
    wildcard_constraints:
        net="resnet18|transformer|mlp",
        step="stock|graphed|compiled",
        scheme="serial|concurrent|mps|hfta",
        precision="fp32|fp16|bf16",
        b=r"\d+",
        run=r"\d+",
    # on a cluster, one allocation per claim group and round (placement.smk claim_group)
    group:
        claim_group("hfta_point")
    threads: PLACER.threads("hfta_point")
    resources:
        **PLACER.resources("hfta_point"),
    params:
        # the GPU of the point's claim group in its round (gpurepro/placement/placer.py)
        **PLACER.params(),
        flags=PLACER.flags("hfta_point", HFTA_FLAGS),
        # a compiled step is graphed too where graphed steps run (a GPU, sgd)
        graphs=lambda w: (
            "on"
            if w.step == "graphed"
            or (w.step == "compiled" and "graphed" in HFTA_STEPS)
            else "off"
        ),
        compile=lambda w: "on" if w.step == "compiled" else "off",
        data=lambda w: (
            HFTA_REAL_FLAGS
            if HFTA_REAL_DATA and w.net == "resnet18"
            else "--data-source synthetic"
        ),
    shell:
        PLACER.container_prefix()
        + "gpurepro hfta --workload {wildcards.net} --mode {wildcards.scheme} --precision {wildcards.precision} "
        "-B {wildcards.b} --run {wildcards.run} --graphs {params.graphs} --compile {params.compile} "
        "{params.data} --gpu {params.gpu} {params.flags} "
        "--out {output.table} --trace-out {output.trace} > {log} 2>&1"


rule hfta:
    input:
        # the study's own rounds and any extra ones (more_processes.smk)
        tables=lambda w: family_raw("hfta", MORE_ROUNDS),
        traces=lambda w: family_raw("hfta", MORE_ROUNDS, "trace"),
    output:
        table=f"{RESULTS}/tables/hfta.csv",
        summary=f"{RESULTS}/tables/hfta_speedup.csv",
        processes=f"{RESULTS}/tables/hfta_processes.csv",
    log:
        f"{RESULTS}/logs/hfta/aggregate.log",
    benchmark:
        f"{RESULTS}/benchmarks/hfta/aggregate.tsv"
    localrule: True
    shell:
        "gpurepro aggregate hfta {input.tables} --out {output.table} --summary {output.summary} "
        "--processes {output.processes} > {log} 2>&1"


rule plot_hfta:
    input:
        table=rules.hfta.output.table,
        # the rates the verdict scales a published figure by, where it takes a measured one (reference.smk)
        reference=f"{RESULTS}/tables/reference.csv",
    output:
        report(
            f"{RESULTS}/plots/hfta.png",
            caption="../report/hfta.rst",
            category="HFTA",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/hfta/plot.log",
    benchmark:
        f"{RESULTS}/benchmarks/hfta/plot.tsv"
    localrule: True
    shell:
        "gpurepro plot hfta {input.table} --reference {input.reference} --out {output} > {log} 2>&1"
