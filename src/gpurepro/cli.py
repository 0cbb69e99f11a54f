"""The `gpurepro` command: every pipeline rule calls one of its subcommands, and each works alone too."""

from __future__ import annotations

import argparse
import sys

from . import __version__, nvml
from .commands import (
    aggregate,
    campaign,
    compare,
    container,
    data,
    detect,
    hfta,
    infer,
    more_processes,
    pack,
    plot,
    profile,
    reference,
    sgemm,
    telemetry,
    train,
    verdict,
)
from .errors import GpureproError

SUBCOMMANDS = [
    detect,
    sgemm,
    infer,
    hfta,
    train,
    telemetry,
    aggregate,
    plot,
    data,
    reference,
    verdict,
    more_processes,
    campaign,
    compare,
    pack,
    profile,
    container,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpurepro",
        description="Reproducible GPU performance and energy studies. The Snakemake workflow calls these "
        "subcommands; each also runs on its own.",
    )
    parser.add_argument("--version", action="version", version=f"gpurepro {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    nvml.number_cuda_like_nvml()
    try:
        return int(args.func(args) or 0)
    except GpureproError as err:
        print(f"gpurepro {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
