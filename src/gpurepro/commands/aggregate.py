"""`gpurepro aggregate STUDY RAW... --out TABLE [--summary TABLE]`: raw files to tidy tables (new files;
raw files untouched)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pandas as pd

from .. import combine, plausibility, process_table, registry, runtimes
from ..errors import GpureproError
from ..hfta_study import summary as hfta_summary
from ..inference import summary as inference_summary
from ..reference import summary as reference_summary
from ..results import sidecar_path, write_table
from ..sgemm import summary as sgemm_summary
from ..training import summary as ddp_summary
from ..variability import summary as variability_summary
from .options import require_paths


def _sgemm(paths: list[str]) -> dict[str, pd.DataFrame]:
    return {"out": sgemm_summary.summarise(paths)}


def _inference(paths: list[str]) -> dict[str, pd.DataFrame]:
    table = inference_summary.summarise(paths)
    return {"out": table, "processes": process_table.summarise(table, inference_summary.PROCESS_KEYS)}


def _variability(paths: list[str]) -> dict[str, pd.DataFrame]:
    reps = variability_summary.all_reps(paths)
    return {"out": reps, "summary": variability_summary.summarise(reps)}


def _hfta(paths: list[str]) -> dict[str, pd.DataFrame]:
    table = hfta_summary.summarise(paths)
    return {
        "out": table,
        "summary": hfta_summary.speedups(table),
        "processes": process_table.summarise(table, hfta_summary.PROCESS_KEYS),
    }


def _ddp(paths: list[str]) -> dict[str, pd.DataFrame]:
    return {"out": ddp_summary.summarise(paths)}


def _reference(paths: list[str]) -> dict[str, pd.DataFrame]:
    return {"out": reference_summary.summarise(paths)}


def _runtimes(paths: list[str]) -> dict[str, pd.DataFrame]:
    return {"out": runtimes.table(paths)}


def _combined(paths: list[str]) -> dict[str, pd.DataFrame]:
    return {"out": combine.combine(paths)}


# Each study's tables, keyed by the option that names their file. Not studies, but made the same way:
# `reference` (this GPU's reference rates, which the verdict scales claims by), `runtimes` (Snakemake
# benchmark files or their folders -> what each job cost) and `combined` (one table from every
# <results>/<profile>/tables/ -> one table across devices).
AGGREGATORS: dict[str, Callable[[list[str]], dict[str, pd.DataFrame]]] = {
    "sgemm": _sgemm,
    "variability": _variability,
    "inference": _inference,
    "hfta": _hfta,
    "ddp": _ddp,
    "reference": _reference,
    "runtimes": _runtimes,
    "combined": _combined,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("aggregate", help="summarise raw results into tidy tables")
    parser.add_argument("study", choices=sorted(AGGREGATORS))
    parser.add_argument(
        "raw", nargs="+",
        help="raw result files (each with its .provenance.json); runtimes: benchmark TSVs or their folders; "
        "combined: <results>/<profile>/tables/<name>.csv of each profile",
    )  # fmt: skip
    parser.add_argument("--out", required=True, help="CSV: the study's table (variability: every rep)")
    parser.add_argument("--summary", help="CSV: the spread summary (variability), the speedups (hfta)")
    parser.add_argument(
        "--processes", help="CSV: each figure over the processes that measured it (inference, hfta)"
    )
    parser.set_defaults(func=run)


# The studies whose raw files each carry a provenance sidecar, which their tables read: the measured ones
# (registry.py); runtimes and combined read files the workflow made.
WITH_SIDECARS = tuple(study for study in AGGREGATORS if study in {r.study for r in registry.RECORDS})


def _require_inputs(args: argparse.Namespace) -> None:
    require_paths("raw", *args.raw, kind="file or folder" if args.study == "runtimes" else "file")
    if args.study in WITH_SIDECARS:
        for raw in args.raw:
            require_paths(f"raw (the provenance sidecar of {raw})", sidecar_path(raw))


def run(args: argparse.Namespace) -> int:
    _require_inputs(args)
    tables = AGGREGATORS[args.study](args.raw)
    for option, table in tables.items():  # all checked before any is written
        plausibility.check_table(table, f"{args.study} {option}")
    outputs = {option: getattr(args, option) for option in tables}
    for option, path in outputs.items():
        if path is None and option != "processes":
            raise GpureproError(f"aggregate {args.study} writes a {option} table: give --{option} FILE")
    for option, table in tables.items():
        # the across-process table is made only where asked for (the workflow asks)
        if outputs[option] is not None:
            write_table(table, outputs[option], f"--{option}")
    return 0
