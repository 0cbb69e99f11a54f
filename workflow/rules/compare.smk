# Comparing this run with another: `snakemake compare --config compare_with=<results folder or archive>`
# writes <results_dir>/compare/<A>_vs_<device>/compare.{md,csv,html,png}, A being the other run (the
# baseline: its results folder, or its archive from `gpurepro pack`, as `gpurepro compare` takes it) and
# B this run's results/<device>. Not part of `all`: it needs a second run to compare with. The folder's
# compare.json (the pair it belongs to) is left undeclared: a rerun with another compare_with of the same
# name has Snakemake remove the declared outputs first, and gpurepro compare refuses only a folder that
# still holds another pair's outputs.

from gpurepro.compare.folders import (  # noqa: E402
    COMPARE_WITH_UNSET,
    baseline_files,
    default_out,
)

COMPARE_WITH = config["compare_with"]
COMPARE_DIR = default_out(COMPARE_WITH or "unset", RESULTS, config["results_dir"])
# A run named as A is checked at start, as the rest of the config is, whatever the target: a folder that
# is not there stops the run here rather than as a failed input of the compare job
try:
    BASELINE = baseline_files(COMPARE_WITH) if COMPARE_WITH else []
except GpureproError as err:
    stop_planning(f"bad config: key compare_with: {err}")


rule compare:
    input:
        # run A's files: a results folder's tables, or a gpurepro pack archive and its checksum. An empty
        # compare_with (the default, which `all` never needs) is refused only when `compare` is planned:
        # the targets are unknown while the Snakefile parses, and Snakemake shows an exception of an
        # input function with its traceback, so this exits with the message alone.
        baseline=lambda wildcards: BASELINE
        or stop_planning(f"gpurepro: {COMPARE_WITH_UNSET}"),
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
