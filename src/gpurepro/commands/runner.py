"""Parsing and running `gpurepro` subcommands: the whole command line (cli.py) and a process that runs a
single subcommand in-process (a node job's per-GPU worker) share one way of reporting errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from .. import __version__, nvml
from ..errors import GpureproError

DESCRIPTION = (
    "Reproducible GPU performance and energy studies. The Snakemake workflow calls these subcommands; "
    "each also runs on its own."
)


def build_parser(subcommands: Sequence[ModuleType]) -> argparse.ArgumentParser:
    """`gpurepro` with these subcommand modules (each exposes register(subparsers))."""
    parser = argparse.ArgumentParser(prog="gpurepro", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"gpurepro {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in subcommands:
        module.register(subparsers)
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    """Parse `argv` and run its subcommand; a GpureproError is a plain message and exit status 2."""
    args = parser.parse_args(argv)
    nvml.number_cuda_like_nvml()
    try:
        return int(args.func(args) or 0)
    except GpureproError as err:
        print(f"gpurepro {args.command}: error: {err}", file=sys.stderr)
        return 2
