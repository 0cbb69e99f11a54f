# The end of the pipeline, included after every study: the reproduction verdict (the claims of
# config/expected/ against this run's tables), what each job cost (Snakemake benchmark files), each table
# combined across the devices whose results are here, and the `report` target, everything that
# `snakemake --report report.html` shows. These rules are cheap and run where Snakemake runs.

from gpurepro.verdict.claims import claim_files  # noqa: E402
from gpurepro.verdict.loading import load_claims  # noqa: E402
from gpurepro.hardware import load_hardware  # noqa: E402
from gpurepro.verdict.points import load_points  # noqa: E402
from gpurepro.runs.verdict_headlines import announcement  # noqa: E402
from snakemake.sourcecache import infer_source_file  # noqa: E402

CLAIMS_DIR = "config/expected"
HARDWARE_DIR = "config/hardware"
POINTS_FILE = "config/points.yaml"
# A bad claim or hardware file, or a claim whose where matches several points (sizes, GPUs, backends),
# stops the run before any job, naming the file, the claim and the key.
try:
    load_claims(
        [Path(workflow.basedir, CLAIMS_DIR)],
        SCHEMAS / "claims.schema.yaml",
        load_hardware(
            Path(workflow.basedir, HARDWARE_DIR), SCHEMAS / "hardware.schema.yaml"
        ),
        load_points(
            Path(workflow.basedir, POINTS_FILE), SCHEMAS / "points.schema.yaml"
        ),
    )
except GpureproError as err:
    stop_planning(str(err))
CLAIM_FILES = [
    str(Path(CLAIMS_DIR, p.name))
    for p in claim_files([Path(workflow.basedir, CLAIMS_DIR)])
]
HARDWARE_FILES = sorted(
    str(Path(HARDWARE_DIR, p.name))
    for p in Path(workflow.basedir, HARDWARE_DIR).glob("*.yaml")
)
# The report's landing page: the verdict per paper once a verdict exists (also when it is made by this
# very run: onsuccess below), else the workflow's description.
VERDICT_LANDING_PAGE = Path(f"{RESULTS}/verdict_summary.rst").resolve()


report:
    str(VERDICT_LANDING_PAGE)
    if VERDICT_LANDING_PAGE.is_file()
    else "../report/workflow.rst"


onsuccess:
    stop_fork_server()
    # --report-after-run read the workflow before this run made the verdict: point the landing page at it
    # (the `report:` directive only works while the workflow is read, so the attribute is set directly).
    if VERDICT_LANDING_PAGE.is_file():
        workflow.report_text = infer_source_file(VERDICT_LANDING_PAGE)
    # A run whose plan holds the verdict ends by naming it: the file and each paper's headline, read back
    # from the file (gpurepro/runs/verdict_headlines.py). `snakemake plot_bert` made none, and names none.
    if any(job.rule.name == "verdict" for job in workflow.dag.jobs):
        print(announcement(Path(rules.verdict.output.md)), file=sys.stderr)


STUDY_TABLES = study_outputs("tables", ".csv")
# The rule that writes each table, for the verdict's hint when a table or a metric is absent.
TABLE_RULES = " ".join(
    f"{name}={rule_.name}"
    for rule_ in workflow.rules
    for name, path in STUDY_TABLES.items()
    if path in map(str, rule_.output)
)
STUDY_PLOTS = study_outputs("plots", ".png")
OTHER_DEVICE_TABLES = {Path(path).stem for path in other_device_tables()}
COMBINED = f"{config['results_dir']}/combined"
COMBINED_TABLES = sorted({*STUDY_TABLES, "runtimes", *OTHER_DEVICE_TABLES})


rule verdict:
    input:
        claims=CLAIM_FILES,
        hardware=HARDWARE_FILES,
        points=POINTS_FILE,
        tables=list(STUDY_TABLES.values()),
        plots=list(STUDY_PLOTS.values()),
    output:
        md=report(
            f"{RESULTS}/verdict.md",
            caption="../report/verdict.rst",
            category="Verdict",
            subcategory=DEVICE,
        ),
        html=report(
            f"{RESULTS}/verdict.html",
            caption="../report/verdict.rst",
            category="Verdict",
            subcategory=DEVICE,
        ),
        csv=f"{RESULTS}/verdict.csv",
        rst=f"{RESULTS}/verdict_summary.rst",
    log:
        f"{RESULTS}/logs/report/verdict.log",
    benchmark:
        f"{RESULTS}/benchmarks/report/verdict.tsv"
    localrule: True
    params:
        profile=DEVICE,
        # GPUs the run had: claims that need more (e.g. 8-GPU scaling) are not measured, and say so
        gpus=len(GPUS) if IS_GPU else 0,
        table_rules=TABLE_RULES,
        # how it was measured: the raw files' provenance sidecars and the resolved configs they name
        results=lambda wildcards, output: os.path.dirname(output.md),
    shell:
        "gpurepro verdict --profile {params.profile} --claims {input.claims} --hardware "
        + HARDWARE_DIR
        + " --points {input.points} --gpus {params.gpus} --tables {input.tables} --plots {input.plots} "
        "--md {output.md} --csv {output.csv} --html {output.html} --rst {output.rst} "
        "--results {params.results} "
        "--table-rules {params.table_rules} > {log} 2>&1"


# Every study job has written its benchmark file once the study's tables and plots exist; the folder is
# read whole, so it also holds jobs of earlier runs into this results folder (e.g. a quick run).
rule runtimes:
    input:
        list(STUDY_TABLES.values()),
        list(STUDY_PLOTS.values()),
    output:
        f"{RESULTS}/tables/runtimes.csv",
    log:
        f"{RESULTS}/logs/report/runtimes.log",
    benchmark:
        f"{RESULTS}/benchmarks/report/runtimes.tsv"
    localrule: True
    params:
        benchmarks=f"{RESULTS}/benchmarks",
    shell:
        "gpurepro aggregate runtimes {params.benchmarks} --out {output} > {log} 2>&1"


rule plot_runtimes:
    input:
        rules.runtimes.output,
    output:
        report(
            f"{RESULTS}/plots/runtimes.png",
            caption="../report/runtimes.rst",
            category="Runtime",
            subcategory=DEVICE,
        ),
    log:
        f"{RESULTS}/logs/report/plot_runtimes.log",
    benchmark:
        f"{RESULTS}/benchmarks/report/plot_runtimes.tsv"
    localrule: True
    shell:
        "gpurepro plot runtimes {input} --out {output} > {log} 2>&1"


rule combined_table:
    input:
        device_tables,
    output:
        report(
            f"{COMBINED}/tables/{{table}}.csv",
            caption="../report/combined.rst",
            category="Combined tables",
        ),
    log:
        f"{COMBINED}/logs/{{table}}.log",
    benchmark:
        f"{COMBINED}/benchmarks/{{table}}.tsv"
    wildcard_constraints:
        table="[a-z0-9_]+",
    localrule: True
    shell:
        "gpurepro aggregate combined {input} --out {output} > {log} 2>&1"


rule combined:
    input:
        expand(rules.combined_table.output, table=COMBINED_TABLES),


# What `snakemake --report report.html` shows: every study's plots, the verdict, the runtimes and, when
# other devices' results are here, the combined tables. One command runs what is missing, then writes
# the report: snakemake report --cores 4 --report report.html --report-after-run
rule report:
    input:
        rules.verdict.output,
        rules.plot_runtimes.output,
        list(STUDY_PLOTS.values()),
        rules.combined.input if OTHER_DEVICE_TABLES else [],
