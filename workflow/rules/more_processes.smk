# More processes where a claim needs them (gpurepro/more_processes, docs/verdict.md). After the rounds of
# a family of points (hfta, deit, bert), the checkpoint `more_processes` judges the claims its tables
# answer as they stand (round k: its own rounds and extra rounds 1..k-1): every point a judged claim
# reads below 3 processes, and the noisier side of every claim still inconclusive, get one more process
# in round k, as the same point jobs with the next run number. The rounds end at the first that plans
# none, at more_processes.rounds, or when the budget (per_point, extra) is spent; the family's tables
# (common.smk family_raw) then take every round's raw files. Each family has its rounds, so one figure
# still reruns alone (`snakemake plot_bert` measures no DeiT point). Each round is a look at the claims,
# their intervals at the level that spending more_processes.looks.alpha over the rounds + 1 looks allows
# (gpurepro/sequential.py, looks.py); the plan records it and the verdict reads the last look's.


rule hfta_round_tables:
    input:
        tables=lambda w: family_raw("hfta", int(w.round) - 1),
        traces=lambda w: family_raw("hfta", int(w.round) - 1, "trace"),
    output:
        table=f"{MORE_DIR}/hfta/round{{round}}/hfta.csv",
        summary=f"{MORE_DIR}/hfta/round{{round}}/hfta_speedup.csv",
        processes=f"{MORE_DIR}/hfta/round{{round}}/hfta_processes.csv",
    log:
        f"{RESULTS}/logs/more_processes/hfta_round{{round}}_tables.log",
    wildcard_constraints:
        round=r"\d+",
    localrule: True
    shell:
        "gpurepro aggregate hfta {input.tables} --out {output.table} --summary {output.summary} "
        "--processes {output.processes} > {log} 2>&1"


rule inference_round_tables:
    input:
        tables=lambda w: family_raw(w.family, int(w.round) - 1),
        traces=lambda w: family_raw(w.family, int(w.round) - 1, "trace"),
    output:
        table=f"{MORE_DIR}/{{family}}/round{{round}}/inference_{{family}}.csv",
        processes=f"{MORE_DIR}/{{family}}/round{{round}}/inference_{{family}}_processes.csv",
    log:
        f"{RESULTS}/logs/more_processes/{{family}}_round{{round}}_tables.log",
    wildcard_constraints:
        family="deit|bert",
        round=r"\d+",
    localrule: True
    shell:
        "gpurepro aggregate inference {input.tables} --out {output.table} "
        "--processes {output.processes} > {log} 2>&1"


checkpoint more_processes:
    input:
        tables=lambda w: round_tables(w.family, w.round),
        earlier=lambda w: [
            f"{MORE_DIR}/{w.family}/round{k}.json" for k in range(1, int(w.round))
        ],
    output:
        plan=f"{MORE_DIR}/{{family}}/round{{round}}.json",
    log:
        f"{RESULTS}/logs/more_processes/{{family}}_round{{round}}.log",
    wildcard_constraints:
        family="hfta|deit|bert",
        round=r"\d+",
    localrule: True
    params:
        study=lambda w: "hfta" if w.family == "hfta" else "inference",
        gpus=len(GPUS) if IS_GPU else 0,
        budget=f"--per-point {MORE['per_point']}"
        + ("" if MORE["extra"] is None else f" --extra {MORE['extra']}"),
        looks=f"--rounds {MORE_ROUNDS} --spending {MORE['looks']['spending']} "
        f"--alpha {MORE['looks']['alpha']}",
    shell:
        "gpurepro more-processes --study {params.study} --tables {input.tables} "
        "--gpus {params.gpus} {params.budget} {params.looks} --earlier {input.earlier} "
        "--out {output.plan} "
        "> {log} 2>&1"
