# gpurepro: GPU performance and energy studies, from one command.
#
#   snakemake --cores 4                         # device=auto: the GPUs here, or the cpu profile
#   snakemake --cores 4 --config device=v100    # name a profile (config/devices/); -n plans without a GPU
#   snakemake plot_sgemm --cores 4              # rerun one piece (targets before --config)
#
# Rules stay thin: each calls one `gpurepro` subcommand; the logic lives in src/gpurepro.

import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


# A results_dir that names a file (results_dir=README.md) stops here in one line, before a rule reads it
# as a folder and Python's NotADirectoryError ends the run.
if Path(str(config.get("results_dir", ""))).is_file():
    sys.exit(
        f"results_dir={config['results_dir']}: that is a file, not a folder; name a folder (it is made "
        "where absent), e.g. --config results_dir=results-run2"
    )


include: "workflow/rules/common.smk"
# Right after the helpers: the container engine, the image rule and its helpers, and the global
# container directive, which applies to the rules defined after it.
include: "workflow/rules/containers.smk"
# Which GPU, CPU slice, threads and resources each job has: one object the rules below ask.
include: "workflow/rules/placement.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/kernels.smk"
include: "workflow/rules/sgemm.smk"
include: "workflow/rules/variability.smk"
# Not in `all`: the variability study over the nodes of a cluster (snakemake campaign).
include: "workflow/rules/campaign.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/hfta.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/profiling.smk"
include: "workflow/rules/reference.smk"
include: "workflow/rules/more_processes.smk"
# Last: the verdict, runtimes and combined tables collect the tables and plots of the studies above.
include: "workflow/rules/report.smk"
# Not in `all`: this run against another (snakemake compare --config compare_with=<results folder>).
include: "workflow/rules/compare.smk"
# The estimate of the planned jobs' wall time, printed before they start.
include: "workflow/rules/runplan.smk"


rule all:
    default_target: True
    input:
        rules.sgemm.output,
        rules.plot_sgemm.output,
        rules.variability.output,
        rules.plot_variability.output,
        rules.inference.input,
        rules.plot_deit.output,
        rules.plot_bert.output,
        rules.hfta.output,
        rules.plot_hfta.output,
        rules.ddp.output,
        rules.plot_ddp.output,
        rules.reference.output,
        rules.report.input,
