# Profiling: one short Nsight Systems trace per workload of the pipeline (`profile_nsys` target, not part
# of `all`), each kept as <workload>.nsys-rep with its CUDA kernel summary <workload>_kern_sum.csv under
# profiles/nsys/. Where nsys is missing, asking for the target stops at planning with a plain message and
# nothing is made; the rest of the workflow plans and runs as before.
# DCGM metrics are sampled by the studies' own measuring jobs (common.smk), not by these traces: DCGM's
# profiling metrics and an nsys trace cannot share the GPU's performance counters on every GPU.

import re

from gpurepro.profiling import nsys as nsys_tool  # noqa: E402

NSYS_DIR = f"{RESULTS}/profiles/nsys"
NSYS_N = min(SGEMM["sizes"])
# A short traced run: little idle time, a short energy window, no cool-down wait; the reps table goes to
# the log (no --out), and no DCGM sampling (see above).
NSYS_FLAGS = (
    f"--profile {DEVICE} --seed {config['seed']} --rate-hz 10 --idle-seconds 1 --energy-window-s 1 "
    "--cooldown-max-wait-s 0 --dcgm-out off"
)
NSYS_INFER = (
    f"--mode eager -b 1 --gpu {PLACER.job_gpu} --min-run-time 1 --warmup 3 {NSYS_FLAGS}"
)
# The fused array at the profile's second-smallest B (or its only one), a few steps, its first precision.
NSYS_HFTA_B = sorted(PROFILE["hfta"]["b_values"])[
    min(1, len(PROFILE["hfta"]["b_values"]) - 1)
]
NSYS_HFTA = (
    f"gpurepro hfta --workload resnet18 --mode hfta -B {NSYS_HFTA_B} --precision "
    f"{PROFILE['hfta']['precisions'][-1]} --batch-size {PROFILE['hfta']['batch_size']} "
    f"--image-size {PROFILE['hfta']['image_size']} --steps 10 --warmup 3 --gpu {PLACER.job_gpu} {NSYS_FLAGS}"
)

# The traced workloads: name -> command. SGEMM with every backend of the study at its smallest size;
# DeiT-B and BERT-B inference, eager, batch 1.
NSYS_WORKLOADS = {
    **{
        f"sgemm_{backend}_n{NSYS_N}": f"gpurepro sgemm {NSYS_N} 20 {PLACER.job_gpu} --backend {backend} "
        f"--warmup 3 {NSYS_FLAGS}"
        for backend in SGEMM_BACKENDS
    },
    "deit-b_b1_eager": f"gpurepro infer vit -m deit-b {NSYS_INFER}",
    "bert-b_s128_b1_eager": f"gpurepro infer bert -m bert-b -s 128 {NSYS_INFER}",
    f"hfta_resnet18_b{NSYS_HFTA_B}_fused": NSYS_HFTA,
    # One GPU, the profile's batch and precision, a few iterations (no raw table: the log has the summary).
    "resnet50_train_1gpu": f"gpurepro train resnet50 --gpus {PLACER.job_gpu} {TRAIN_FLAGS} --iterations 10",
}
# Workloads that run the CUDA sgemm binary (cublas, tiled) need it built first.
NSYS_BINARIES = {
    name: (
        rules.build_kernels.output.sgemm
        if re.match(r"sgemm_(cublas|tiled)_", name)
        else []
    )
    for name in NSYS_WORKLOADS
}


wildcard_constraints:
    workload="|".join(map(re.escape, NSYS_WORKLOADS)),


rule profile_nsys_run:
    input:
        **container_input(),
        # nsys is looked for only when a trace is asked for (require() stops with a plain message where it
        # is missing), so that planning anything else works without it; under docker it is in the image.
        binary=lambda wildcards: (
            NSYS_BINARIES[wildcards.workload]
            if DOCKER_GPU_JOBS or nsys_tool.require("profile_nsys")
            else []
        ),
    output:
        report=protected(f"{NSYS_DIR}/{{workload}}.nsys-rep"),
        kern_sum=protected(f"{NSYS_DIR}/{{workload}}_kern_sum.csv"),
        kern_sum_provenance=protected(
            f"{NSYS_DIR}/{{workload}}_kern_sum.provenance.json"
        ),
    log:
        f"{RESULTS}/logs/profiles/nsys/{{workload}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/profiles/nsys/{{workload}}.tsv"
    threads: PLACER.measure_threads()
    resources:
        **PLACER.measure_resources(),
    params:
        stem=lambda wildcards, output: output.report[: -len(".nsys-rep")],
        gpu=PLACER.job_gpu,
        profile=DEVICE,
        command=lambda wildcards: NSYS_WORKLOADS[wildcards.workload],
        binary=binary_flag,
    shell:
        container_exec(PLACER.measure_gpu)
        + "gpurepro profile nsys --out {params.stem} --gpu {params.gpu} --profile {params.profile} "
        "-- {params.command} {params.binary} > {log} 2>&1"


rule profile_nsys:
    input:
        expand(rules.profile_nsys_run.output.kern_sum, workload=NSYS_WORKLOADS),
    localrule: True
