# Images for the training study and the noise workload (config `data`): synthetic by default (nothing to
# make), Tiny-ImageNet downloaded from its public address, or ImageNet from archives the user supplies.
# A real dataset is complete when its manifest.json exists (written last), so a study that reads images
# takes `DATASET_INPUT` as input and passes `DATASET_FLAGS` to its `gpurepro` command.

from gpurepro.datasets.imagenet_archives import (  # noqa: E402
    archive_paths,
    check_archives,
)
from gpurepro.datasets.workers import resolve_workers  # noqa: E402

DATA = config["data"]
DATA_DIR = DATA["data_dir"]
TINY = DATA["tiny_imagenet"]
TINY_ZIP = f"{DATA_DIR}/downloads/tiny-imagenet-200.zip"
TINY_CHECKSUM_ALGORITHM, TINY_DIGEST = TINY["checksum"].lower().split(":")
DATASET_ROOTS = {
    "tiny-imagenet": f"{DATA_DIR}/tiny-imagenet-200",
    "imagenet": f"{DATA_DIR}/imagenet",
}
SYNTHETIC = DATA["source"] == "synthetic"
DATASET_INPUT = [] if SYNTHETIC else [f"{DATASET_ROOTS[DATA['source']]}/manifest.json"]
DATASET_FLAGS = f"--source {DATA['source']} --seed {config['seed']} " + (
    f"--like {DATA['synthetic']['like']}"
    if SYNTHETIC
    else f"--root {DATASET_ROOTS[DATA['source']]}"
)
# The loaded data in result file names: a source, or synthetic-<the set it stands in for>.
DATASET_NAME = f"synthetic-{DATA['synthetic']['like']}" if SYNTHETIC else DATA["source"]
LOADER_WORKERS = resolve_workers(DATA["loader"]["workers"])
IMAGENET_ARCHIVES = archive_paths(DATA["imagenet"], DATA_DIR)
# ImageNet's archives are the user's to supply: until the set is extracted, a missing one stops the run at
# start, as a bad config does, saying what to download and where to put it (an input function's error
# would come with Snakemake's traceback, after the DAG was half built).
if (
    DATA["source"] == "imagenet"
    and not Path(DATASET_ROOTS["imagenet"], "manifest.json").exists()
):
    try:
        check_archives(**{role: Path(path) for role, path in IMAGENET_ARCHIVES.items()})
    except GpureproError as err:
        stop_planning(f"bad config: key data.source: imagenet: {err}")


rule download_tiny_imagenet:
    output:
        # pooch verifies any checksum before the file appears; Snakemake checks a sha256 once more.
        (
            ensure(TINY_ZIP, sha256=TINY_DIGEST)
            if TINY_CHECKSUM_ALGORITHM == "sha256"
            else ensure(TINY_ZIP, non_empty=True)
        ),
    log:
        f"{DATA_DIR}/logs/download_tiny_imagenet.log",
    benchmark:
        f"{DATA_DIR}/benchmarks/download_tiny_imagenet.tsv"
    # A dropped connection fails the job and Snakemake starts it again; each try goes through the url
    # and then every mirror once, and leaves no partial file.
    retries: 2
    params:
        urls=[TINY["url"], *TINY["mirrors"]],
        checksum=TINY["checksum"],
    shell:
        "gpurepro data download {params.urls:q} --checksum {params.checksum} --attempts 1 "
        "--out {output:q} > {log:q} 2>&1"


rule tiny_imagenet:
    input:
        rules.download_tiny_imagenet.output,
    output:
        f"{DATASET_ROOTS['tiny-imagenet']}/manifest.json",
    log:
        f"{DATA_DIR}/logs/tiny_imagenet.log",
    benchmark:
        f"{DATA_DIR}/benchmarks/tiny_imagenet.tsv"
    params:
        dest=lambda wildcards, output: Path(output[0]).parent,
        checksum=TINY["checksum"],
    shell:
        "gpurepro data tiny-imagenet --archive {input:q} --checksum {params.checksum} "
        "--dest {params.dest:q} > {log:q} 2>&1"


rule imagenet:
    input:
        **IMAGENET_ARCHIVES,
    output:
        f"{DATASET_ROOTS['imagenet']}/manifest.json",
    log:
        f"{DATA_DIR}/logs/imagenet.log",
    benchmark:
        f"{DATA_DIR}/benchmarks/imagenet.tsv"
    params:
        dest=lambda wildcards, output: Path(output[0]).parent,
        full="--expect-full" if DATA["imagenet"]["full"] else "",
    shell:
        "gpurepro data imagenet --train-tar {input.train_tar:q} --val-tar {input.val_tar:q} "
        "--val-labels {input.val_labels:q} --dest {params.dest:q} {params.full} > {log:q} 2>&1"


rule loader_bench:
    input:
        DATASET_INPUT,
    output:
        table=protected(f"{RESULTS}/data/raw/loader_{DATASET_NAME}.csv"),
        table_provenance=protected(
            f"{RESULTS}/data/raw/loader_{DATASET_NAME}.provenance.json"
        ),
    log:
        f"{RESULTS}/logs/data/loader_{DATASET_NAME}.log",
    benchmark:
        f"{RESULTS}/benchmarks/data/loader_{DATASET_NAME}.tsv"
    threads: LOADER_WORKERS + 1
    params:
        data=DATASET_FLAGS,
        batch_size=PROFILE["hfta"]["batch_size"],
        workers=LOADER_WORKERS,
        seconds=DATA["loader"]["bench_seconds"],
        profile=DEVICE,
    shell:
        "gpurepro data loader-bench {params.data} --batch-size {params.batch_size} "
        "--workers {params.workers} --seconds {params.seconds} --profile {params.profile} "
        "--out {output.table:q} > {log:q} 2>&1"
