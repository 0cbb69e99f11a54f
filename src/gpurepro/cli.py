"""The `gpurepro` command: every pipeline rule calls one of its subcommands, and each works alone too."""

from __future__ import annotations

import argparse
import sys

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
    runner,
    sgemm,
    telemetry,
    train,
    verdict,
)

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
    return runner.build_parser(SUBCOMMANDS)


def main(argv: list[str] | None = None) -> int:
    return runner.run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
