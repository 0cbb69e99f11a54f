# A variability campaign (`campaign` target): one job per node measures every selected GPU of that node at
# once (`gpurepro campaign node`), through SLURM one exclusive job per node (profiles/slurm), or this
# machine alone without it. Nodes SLURM will not run a job on are recorded as unavailable with SLURM's
# reason; each try at a node gets its own attempt folder, so a rerun measures only the nodes without a
# measured attempt and never writes into an earlier try (gpurepro/campaign/layout.py, plan.py), but for
# the record of a try whose job ended before it could write one (killed: SIGKILL, its node down), which
# the tables step writes once the job has ended, with SLURM's state (gpurepro/campaign/unrecorded.py).
# Then the cluster's tables, figure and verdict, in the campaign's own folder (results/<device>/campaign/
# <name>/tables/campaign_*.csv, plots/campaign.png, verdict.md): apart from the run's tables/ and plots/,
# whose every file the report and `all` collect, as a campaign is asked for on its own (`snakemake
# campaign`).

import socket

from gpurepro.campaign import plan as campaign_plan  # noqa: E402
from gpurepro.campaign.estimate import estimate as campaign_estimate  # noqa: E402

CAMPAIGN = config["campaign"]
CAMPAIGN_DIR = f"{RESULTS}/campaign/{CAMPAIGN['name']}"
CAMPAIGN_RAW = f"{CAMPAIGN_DIR}/raw"
# One backend: cuBLAS where the kernels are built (as the seed and SC22 measured), else torch.
CAMPAIGN_BACKEND = "cublas" if KERNELS else "torch"
CAMPAIGN_NODES = campaign_plan.select_nodes(
    CAMPAIGN["nodes"], CAMPAIGN["partition"], CAMPAIGN["node_count"]
)
if CAMPAIGN_NODES and not CLUSTER:
    stop_planning(
        f"campaign.nodes names {len(CAMPAIGN_NODES)} node(s), and jobs run here: run the campaign with "
        "--profile profiles/slurm, or leave campaign.nodes and campaign.partition empty to measure this "
        "machine alone"
    )
# Without SLURM and without nodes named, the campaign is this machine; through SLURM without nodes named,
# it has none, and `gpurepro campaign tables` says what to set.
if not CLUSTER and not CAMPAIGN_NODES:
    CAMPAIGN_NODES = [socket.gethostname()]
# sinfo's states where SLURM runs the campaign, read once by the process that plans it (each job's own
# Snakemake builds only its node's target).
CAMPAIGN_STATES = (
    campaign_plan.node_states(CAMPAIGN_NODES)
    if CLUSTER
    and CAMPAIGN_NODES
    and workflow.is_main_process
    and campaign_plan.slurm_here()
    else None
)
CAMPAIGN_PLAN = campaign_plan.plan(CAMPAIGN_RAW, CAMPAIGN_NODES, CAMPAIGN_STATES)
# Each node's GPUs: the first gpus_per_node of its allocation on a cluster, the selected ones here.
CAMPAIGN_GPUS = (
    (list(range(CAMPAIGN["gpus_per_node"])) if CLUSTER else GPUS) if IS_GPU else []
)
CAMPAIGN_DEVICES = (
    f"--gpus {','.join(map(str, CAMPAIGN_GPUS))}"
    if IS_GPU
    else f"--stand-ins {CAMPAIGN['gpus_per_node']}"
)
CAMPAIGN_RECORD = f"{CAMPAIGN_RAW}/{{node}}/attempt{{attempt}}/node.json"


# Said once the campaign is planned, before its jobs are submitted: by the input function of its tables,
# which only a run that asks for the campaign calls.
CAMPAIGN_ESTIMATE = (
    "gpurepro: "
    + campaign_estimate(
        len(CAMPAIGN_PLAN.to_measure),
        len(CAMPAIGN_GPUS) or CAMPAIGN["gpus_per_node"],
        VARIABILITY["runs"],
        CAMPAIGN["run_minutes"],
        workflow.resource_settings.nodes or 1,
    ).describe()
    + f" ({len(CAMPAIGN_PLAN.done)} node(s) already measured, {len(CAMPAIGN_PLAN.unavailable)} "
    "unavailable in SLURM)"
    if CAMPAIGN_PLAN.to_measure and workflow.is_main_process
    else ""
)
CAMPAIGN_RECORDS = [
    CAMPAIGN_RECORD.format(node=node, attempt=attempt)
    for node, attempt in CAMPAIGN_PLAN.attempts.items()
]


rule campaign_node:
    input:
        **container_input(),
        binary=lambda wildcards: (
            [] if CAMPAIGN_BACKEND == "torch" else rules.build_kernels.output.sgemm
        ),
    output:
        record=protected(CAMPAIGN_RECORD),
    log:
        f"{RESULTS}/logs/campaign/{{node}}_attempt{{attempt}}.log",
    wildcard_constraints:
        node=campaign_plan.node_pattern(CAMPAIGN_PLAN.to_measure),
        attempt=r"\d+",
    threads: PLACER.cores if not CLUSTER else 1
    resources:
        # Locally every selected GPU is the job's; on a cluster the whole node, exclusively.
        **(
            {
                "slurm_extra": lambda wildcards: f"--nodelist={wildcards.node} --exclusive",
                "nodes": 1,
                "runtime": int(VARIABILITY["runs"] * CAMPAIGN["run_minutes"] + 15),
                **({"gres": f"gpu:{len(CAMPAIGN_GPUS)}"} if IS_GPU else {}),
                **(
                    {"constraint": CAMPAIGN["constraint"]}
                    if CAMPAIGN["constraint"]
                    else {}
                ),
            }
            if CLUSTER
            else PLACER.all_gpus_resources()
        ),
    params:
        n=VARIABILITY["n"],
        reps=VARIABILITY["reps"],
        runs=VARIABILITY["runs"],
        # a run's processes still running past the run's estimate and the time limit's margin are
        # stopped and named in the node's record (a hung GPU); SLURM's time limit is recorded too
        run_timeout=int((CAMPAIGN["run_minutes"] + 15) * 60),
        devices=CAMPAIGN_DEVICES,
        out_dir=lambda wildcards, output: Path(output.record).parent,
        log_dir=lambda wildcards: f"{RESULTS}/logs/campaign/{wildcards.node}_attempt{wildcards.attempt}",
        # every GPU of the node measured as a variability job measures one; its idle temperatures kept
        # per node, as GPU 0 of one node is not GPU 0 of another
        sgemm=lambda wildcards, input: " ".join(
            filter(
                None,
                [
                    f"{measurement_flags('variability')} --warmup {SGEMM['warmup']}",
                    f"--idle-temperature-dir {CAMPAIGN_DIR}/cooldown/{wildcards.node}",
                    binary_flag(wildcards, input),
                ],
            )
        ),
    shell:
        container_exec_all_gpus()
        + "gpurepro campaign node {params.n} {params.reps} --runs {params.runs} "
        "--run-timeout-s {params.run_timeout} "
        f"--backend {CAMPAIGN_BACKEND} "
        "{params.devices} --out-dir {params.out_dir} --log-dir {params.log_dir} "
        "--sgemm-args '{params.sgemm}' > {log} 2>&1"


rule campaign_unavailable:
    output:
        record=protected(CAMPAIGN_RECORD),
    log:
        f"{RESULTS}/logs/campaign/{{node}}_attempt{{attempt}}.log",
    wildcard_constraints:
        node=campaign_plan.node_pattern(CAMPAIGN_PLAN.unavailable),
        attempt=r"\d+",
    localrule: True
    params:
        reason=lambda wildcards: CAMPAIGN_PLAN.unavailable[wildcards.node],
    shell:
        "gpurepro campaign unavailable {wildcards.node} --out-dir $(dirname {output.record}) "
        "--reason {params.reason:q} > {log} 2>&1"


rule campaign_tables:
    input:
        lambda wildcards: campaign_plan.announced(CAMPAIGN_RECORDS, CAMPAIGN_ESTIMATE),
    output:
        gpus=f"{CAMPAIGN_DIR}/tables/campaign_gpus.csv",
        summary=f"{CAMPAIGN_DIR}/tables/campaign_summary.csv",
        outliers=f"{CAMPAIGN_DIR}/tables/campaign_outliers.csv",
        nodes=f"{CAMPAIGN_DIR}/tables/campaign_nodes.csv",
    log:
        f"{RESULTS}/logs/campaign/tables.log",
    localrule: True
    params:
        nodes=" ".join(CAMPAIGN_NODES),
    shell:
        f"gpurepro campaign tables {CAMPAIGN_RAW} --campaign {CAMPAIGN['name']} "
        "--nodes {params.nodes} --out-dir $(dirname {output.gpus}) > {log} 2>&1"


rule plot_campaign:
    input:
        rules.campaign_tables.output.gpus,
    output:
        report(
            f"{CAMPAIGN_DIR}/plots/campaign.png",
            caption="../report/campaign.rst",
            category="Variability",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/campaign/plot.log",
    localrule: True
    shell:
        "gpurepro campaign plot {input} --out {output} > {log} 2>&1"


# The claims about a cluster's GPUs (SC22's average variation and outliers, the seed's node spread) judged
# on the campaign's tables (gpurepro/verdict/campaign.py); the claim, hardware and point files are
# report.smk's, read when the DAG is built.
rule campaign_verdict:
    input:
        tables=rules.campaign_tables.output,
        plot=rules.plot_campaign.output,
        claims=lambda wildcards: CLAIM_FILES,
        hardware=lambda wildcards: HARDWARE_FILES,
        points=lambda wildcards: POINTS_FILE,
    output:
        md=f"{CAMPAIGN_DIR}/verdict.md",
        csv=f"{CAMPAIGN_DIR}/verdict.csv",
    log:
        f"{RESULTS}/logs/campaign/verdict.log",
    localrule: True
    params:
        profile=DEVICE,
        folder=lambda wildcards, output: os.path.dirname(output.md),
        hardware=lambda wildcards, input: os.path.dirname(input.hardware[0]),
    shell:
        "gpurepro verdict --profile {params.profile} --campaign {params.folder} --claims {input.claims} "
        "--hardware {params.hardware} --points {input.points} --md {output.md} --csv {output.csv} "
        "> {log} 2>&1"


rule campaign:
    input:
        rules.campaign_tables.output,
        rules.plot_campaign.output,
        rules.campaign_verdict.output,
