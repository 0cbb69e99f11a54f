# Comparing this run with another: `snakemake compare --config compare_with=<results folder>` writes
# <results_dir>/compare/<A>_vs_<device>/compare.{md,csv,html,png}, A being the other run (the baseline)
# and B this run's results/<device>. Not part of `all`: it needs a second run to compare with.

from gpurepro.compare.folders import baseline_tables, default_out  # noqa: E402

COMPARE_WITH = config["compare_with"]
COMPARE_DIR = default_out(COMPARE_WITH or "unset", RESULTS, config["results_dir"])


rule compare:
    input:
        # asked only when `compare` is a target: stops saying how to set compare_with where it is unset
        baseline=lambda wildcards: baseline_tables(COMPARE_WITH),
        tables=list(STUDY_TABLES.values()),
    output:
        md=report(
            f"{COMPARE_DIR}/compare.md",
            caption="../report/compare.rst",
            category="Comparison",
        ),
        html=report(
            f"{COMPARE_DIR}/compare.html",
            caption="../report/compare.rst",
            category="Comparison",
        ),
        png=report(
            f"{COMPARE_DIR}/compare.png",
            caption="../report/compare.rst",
            category="Comparison",
        ),
        csv=f"{COMPARE_DIR}/compare.csv",
    log:
        f"{RESULTS}/logs/report/compare.log",
    benchmark:
        f"{RESULTS}/benchmarks/report/compare.tsv"
    localrule: True
    params:
        a=COMPARE_WITH,
        b=lambda wildcards, input: str(Path(input.tables[0]).parents[1]),
        out=lambda wildcards, output: str(Path(output.md).parent),
    shell:
        "gpurepro compare {params.a} {params.b} --out {params.out} > {log} 2>&1"
