"""`gpurepro data ...`: fetch, extract and check the image sets, and time their loaders.

gpurepro data download URL [MIRROR ...] --checksum md5:... --out FILE
gpurepro data tiny-imagenet --dest data/tiny-imagenet-200 [--url URL --mirror URL | --archive ZIP]
gpurepro data imagenet --train-tar T --val-tar V --val-labels DEVKIT_OR_TXT --dest DIR [--expect-full]
gpurepro data loader-bench --source synthetic --batch-size 128 --seconds 20 [--out CSV]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import provenance, results
from ..datasets import specs
from ..datasets.download import parse_checksum
from ..datasets.workers import resolve_workers
from ..errors import GpureproError
from .options import add_config_hash_option, positive_float, positive_int

# torch, torchvision and the extraction code load inside each command: `gpurepro --help` and the
# other subcommands should not wait for them.


def _workers(value: str) -> int | str:
    if value == "auto":
        return value
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"'{value}' is not 'auto' or a number of workers (0 or more)")
    return int(value)


def _checksum(value: str) -> str:
    try:
        return parse_checksum(value)
    except GpureproError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "data",
        help="download, extract and check image datasets; time their loaders",
        description="Image data for the training study and the noise workload. Every dataset is built "
        "beside its destination and moved into place with its manifest.json only when complete.",
    )
    commands = parser.add_subparsers(dest="data_command", metavar="DATA_COMMAND", required=True)

    fetch = commands.add_parser(
        "download",
        help="download one file, checksum-verified, trying each address in turn",
        description="Download with pooch: progress bar, checksum check before the file is moved into "
        "place, retries, then the next address. A file already there with the checksum is kept.",
    )
    fetch.add_argument("urls", nargs="+", metavar="URL", help="address, then mirrors, tried in order")
    fetch.add_argument("--checksum", required=True, type=_checksum, help="md5:<hex> or sha256:<hex>")
    fetch.add_argument("--out", required=True, type=Path, help="file to write")
    fetch.add_argument("--attempts", type=positive_int, default=3, help="tries per address (default 3)")
    fetch.set_defaults(func=run_download)

    tiny = commands.add_parser(
        "tiny-imagenet",
        help="download (or take) tiny-imagenet-200.zip and extract it in ImageFolder layout",
        description="Download tiny-imagenet-200.zip (or take --archive), extract it safely, move the val "
        "images into class folders from val/val_annotations.txt, check the counts, write manifest.json.",
    )
    tiny.add_argument("--dest", required=True, type=Path, help="dataset folder, e.g. data/tiny-imagenet-200")
    source = tiny.add_mutually_exclusive_group()
    source.add_argument("--archive", type=Path, help="use this local zip instead of downloading")
    source.add_argument(
        "--url", default=specs.TINY_IMAGENET_URL, help=f"address (default {specs.TINY_IMAGENET_URL})"
    )
    tiny.add_argument("--mirror", action="append", default=[], help="address tried when --url fails (repeat)")
    tiny.add_argument(
        "--checksum",
        type=_checksum,
        default=specs.TINY_IMAGENET_CHECKSUM,
        help=f"checksum of the zip (default: the official file's {specs.TINY_IMAGENET_CHECKSUM})",
    )
    tiny.add_argument("--attempts", type=positive_int, default=3, help="download tries per address")
    tiny.set_defaults(func=run_tiny_imagenet)

    full = commands.add_parser(
        "imagenet",
        help="extract the official ILSVRC2012 archives you downloaded into ImageFolder layout",
        description=f"Extract {specs.IMAGENET_TRAIN_TAR} (one tar per class) and "
        f"{specs.IMAGENET_VAL_TAR} (flat images, put in class folders from {specs.IMAGENET_DEVKIT} or a "
        "'<val image> <wnid>' text file), check the counts, write manifest.json. Get the archives at "
        f"{specs.IMAGENET_DOWNLOAD_PAGE} (needs an account).",
    )
    full.add_argument("--train-tar", required=True, type=Path, help=specs.IMAGENET_TRAIN_TAR)
    full.add_argument("--val-tar", required=True, type=Path, help=specs.IMAGENET_VAL_TAR)
    full.add_argument(
        "--val-labels", required=True, type=Path, help=f"{specs.IMAGENET_DEVKIT}, or a labels text file"
    )
    full.add_argument("--dest", required=True, type=Path, help="dataset folder, e.g. data/imagenet")
    full.add_argument(
        "--expect-full",
        action="store_true",
        help="require the official archives (their MD5) and all 1000 classes, 1,281,167 train and "
        "50,000 val images",
    )
    full.set_defaults(func=run_imagenet)

    bench = commands.add_parser(
        "loader-bench",
        help="images/s of a DataLoader on its own (is the data a bottleneck?)",
        description="Read batches for --seconds with nothing else running and report images/s, leaving "
        "out the first batch (worker start-up). Per-batch rows go to --out with a provenance sidecar.",
    )
    bench.add_argument("--source", choices=specs.SOURCES, default="synthetic")
    bench.add_argument("--root", type=Path, help="dataset folder (tiny-imagenet, imagenet)")
    bench.add_argument(
        "--like", choices=["tiny-imagenet", "imagenet"], default="tiny-imagenet", help="synthetic's shapes"
    )
    bench.add_argument("--split", choices=["train", "val"], default="train")
    bench.add_argument(
        "--batch-size", required=True, type=positive_int, help="the device profile's batch size"
    )
    bench.add_argument("--workers", type=_workers, default="auto", help="'auto' or a number (default auto)")
    bench.add_argument("--seconds", type=positive_float, default=10.0, help="measuring window (default 10)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--out", type=Path, help="per-batch CSV (never overwritten); default: stdout")
    bench.add_argument("--profile", default="none", help="device profile the result is filed under")
    add_config_hash_option(bench)
    bench.set_defaults(func=run_loader_bench)


def run_download(args: argparse.Namespace) -> int:
    from ..datasets import download

    path = download.download(args.urls, args.checksum, args.out, args.attempts)
    print(f"{path}: {args.checksum} verified", file=sys.stderr)
    return 0


def run_tiny_imagenet(args: argparse.Namespace) -> int:
    from ..datasets import download, tiny_imagenet

    archive = args.archive
    if archive is None:
        archive = args.dest.with_name(f"{args.dest.name}.zip")
        download.download([args.url, *args.mirror], args.checksum, archive, args.attempts)
    manifest = tiny_imagenet.prepare(archive, args.dest, args.checksum)
    print(_describe(args.dest, manifest), file=sys.stderr)
    return 0


def run_imagenet(args: argparse.Namespace) -> int:
    from ..datasets import imagenet

    manifest = imagenet.prepare(args.train_tar, args.val_tar, args.val_labels, args.dest, args.expect_full)
    print(_describe(args.dest, manifest), file=sys.stderr)
    return 0


def _describe(dest: Path, manifest: dict) -> str:
    return (
        f"{dest}: {manifest['classes']} classes, {manifest['train_images']:,} train and "
        f"{manifest['val_images']:,} val images; manifest.json written"
    )


def run_loader_bench(args: argparse.Namespace) -> int:
    from ..datasets import loader_bench, loaders

    workers = resolve_workers(args.workers)
    if args.out is not None:
        results.ensure_absent(args.out)
    dataset = loaders.make_dataset(args.source, args.split, args.seed, args.root, args.like)
    loader = loaders.make_loader(dataset, args.batch_size, workers, args.seed, train=args.split == "train")
    name = f"synthetic ({args.like})" if args.source == "synthetic" else f"{args.source} at {args.root}"
    settings = {
        "source": args.source if args.source != "synthetic" else f"synthetic-{args.like}",
        "split": args.split,
        "batch_size": args.batch_size,
        "workers": workers,
    }
    started = provenance.begin([], args.profile, args.config_hash, {"loader": settings})
    batches = loader_bench.time_batches(loader, args.seconds)
    measured = loader_bench.rate(batches)
    print(
        f"loader {name}, {args.split}: {measured.images_per_s:,.0f} images/s (batch {args.batch_size}, "
        f"{workers} workers, {measured.batches} batches in {measured.window_s:.1f} s; first batch after "
        f"{measured.first_batch_s:.2f} s)",
        file=sys.stderr,
    )
    table = batches.assign(**settings)
    if args.out is None:
        table.to_csv(sys.stdout, index=False)
    else:
        results.write_raw(table, args.out, provenance.finish(started, {"rate": measured.as_dict()}))
    return 0
