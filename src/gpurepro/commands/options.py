"""Command-line options several subcommands share, defined once."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pandas as pd

from .. import nvml
from ..errors import GpureproError
from ..harness import TelemetrySettings
from ..host import PIN_MODES
from ..measure_job import JobFiles, JobSettings
from ..telemetry import SAMPLERS

PathKind = Literal["file", "folder", "file or folder"]
PATH_CHECKS: dict[str, Callable[[Path], bool]] = {
    "file": Path.is_file,
    "folder": Path.is_dir,
    "file or folder": Path.exists,
}


def require_paths(argument: str, *paths: Path | str | None, kind: PathKind = "file") -> None:
    """Stop, naming the argument and the path, where a file or folder a command reads is not there (None:
    an optional argument not given): before any work, rather than with the traceback of the first open().
    """
    for path in (Path(given) for given in paths if given is not None):
        if PATH_CHECKS[kind](path):
            continue
        if not path.exists():
            raise GpureproError(f"argument {argument}: no such {kind}: {path}")
        found = "a folder" if path.is_dir() else "a file" if path.is_file() else "neither file nor folder"
        raise GpureproError(f"argument {argument}: not a {kind}: {path} is {found}")


def read_table(argument: str, path: Path | str) -> pd.DataFrame:
    """A CSV table a command reads; a missing, empty or unparsable one is an error naming the argument."""
    require_paths(argument, path)
    try:
        return pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as err:
        raise GpureproError(f"argument {argument}: {path} is not a CSV table: {err}") from None


def default_gpu() -> int | str:
    """GPU 0 where NVML finds one, else the CPU: what a measuring command runs on when not told."""
    available, _ = nvml.available()
    return 0 if available else "cpu"


def gpu_or_cpu(value: str) -> int | str:
    """A GPU index (0, 1, ...) or the word 'cpu'."""
    if value == "cpu":
        return value
    try:
        index = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value}' is not a GPU index (0, 1, ...) or 'cpu'") from None
    if index < 0:
        raise argparse.ArgumentTypeError(f"GPU index must be 0 or more, got {index}")
    return index


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return number


def non_negative_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return number


def positive_float(value: str) -> float:
    number = float(value)
    if not number > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return number


def non_negative_float(value: str) -> float:
    number = float(value)
    if not number >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return number


def add_config_hash_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The workflow passes its config hash in the environment, not on the command line, so that changing
    an unrelated config key does not make Snakemake rerun (and refuse to overwrite) finished measurements."""
    parser.add_argument(
        "--config-hash",
        default=os.environ.get("GPUREPRO_CONFIG_HASH", ""),
        help="hash of the workflow config, for provenance (default: $GPUREPRO_CONFIG_HASH)",
    )


def add_sampler_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: str) -> None:
    parser.add_argument(
        "--sampler",
        choices=list(SAMPLERS),
        default=default,
        help="where the telemetry sampler runs: its own process, which takes no time from the measured "
        f"work, or a thread of the measuring process (default: {default})",
    )


def add_profile_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The device profile a result is filed under, and what a GPU of another model than its does."""
    parser.add_argument("--profile", help="device profile the result is filed under (default: auto-detect)")
    parser.add_argument(
        "--device-check",
        choices=["error", "warn"],
        default=os.environ.get("GPUREPRO_DEVICE_CHECK", "error"),
        help="when the GPU is not the profile's model: stop (error) or record the mismatch (warn); "
        "default: $GPUREPRO_DEVICE_CHECK or error",
    )


def add_end_record_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """GPU work that is no measurement of its own (training, the reference rates) in a run of measurements."""
    parser.add_argument(
        "--idle-temperature-dir", type=Path,
        help="the run's cool-down folder (as the measuring commands take it): this job's end on its GPUs is "
        "recorded there, so the next measurement on them settles after it",
    )  # fmt: skip


def add_measurement_options(parser: argparse.ArgumentParser, active_idle: bool = False) -> None:
    """Profile check, output files and telemetry settings of a measuring subcommand; `active_idle` for
    the subcommands whose workload measures an active idle (harness.Workload.active_idle)."""
    group = parser.add_argument_group("measurement")
    add_profile_options(group)
    group.add_argument("--out", help="raw per-rep CSV (with a provenance sidecar); default: print to stdout")
    group.add_argument("--trace-out", help="telemetry trace CSV (with a provenance sidecar)")
    group.add_argument(
        "--dcgm-out",
        default=os.environ.get("GPUREPRO_DCGM_OUT"),
        help="DCGM profiling metrics CSV, where DCGM exists (else the provenance says why not); 'auto': "
        "<stem>.dcgm.csv beside --trace-out; default: $GPUREPRO_DCGM_OUT, else not sampled",
    )
    add_config_hash_option(group)
    group.add_argument("--seed", type=int, default=0)
    group.add_argument(
        "--pin", choices=PIN_MODES, default="auto",
        help="auto: run the measuring process on the CPUs NVML names nearest its GPU, with torch's threads "
        "set to the job's ($OMP_NUM_THREADS, as Snakemake sets it; else those CPUs' count), where NVML names "
        "such CPUs and they are at least the job's threads; off: leave it where it is. The provenance says "
        "which, and why not (default: auto)",
    )  # fmt: skip
    group.add_argument(
        "--torch-threads", type=positive_int, default=None,
        help="torch's threads, and those of the processes the job starts, where they are not the job's "
        "($OMP_NUM_THREADS), pinned or not: a placed job that keeps the host to itself holds every core yet "
        "measures with the one-GPU plan's threads",
    )  # fmt: skip
    defaults = TelemetrySettings()
    group.add_argument("--rate-hz", type=float, default=defaults.rate_hz, help="telemetry samples per second")
    add_sampler_option(group, defaults.sampler)
    group.add_argument("--idle-seconds", type=float, default=defaults.idle_seconds)
    group.add_argument("--energy-window-s", type=float, default=defaults.min_energy_window_s)
    group.add_argument("--cooldown-max-wait-s", type=float, default=defaults.cooldown_max_wait_s)
    group.add_argument(
        "--idle-temperature-dir", type=Path,
        help="folder of each GPU's idle temperature at the start of the run (the first measurement on a GPU "
        "records it): the cool-down waits until the GPU is within 1 C of it, or at a plateau, and not at "
        "all when it already is (default: wait for a plateau)",
    )  # fmt: skip
    if active_idle:
        group.add_argument(
            "--active-idle-seconds",
            type=non_negative_float,
            default=defaults.active_idle_seconds,
            help="seconds of active idle (model built and warm, device at rest) in an energy window of its "
            f"own, after the model is prepared (default {defaults.active_idle_seconds:g})",
        )


def job_settings(args: argparse.Namespace) -> JobSettings:
    """What add_measurement_options asked for, as the measuring job takes it (measure_job.run_job)."""
    return JobSettings(job_files(args), telemetry_settings(args), args.dcgm_out, args.pin, args.torch_threads)


def job_files(args: argparse.Namespace) -> JobFiles:
    """Where a measuring subcommand files its point, measured or failed (measure_job.record_failure)."""
    return JobFiles(args.out, args.trace_out, args.config_hash)


def telemetry_settings(args: argparse.Namespace) -> TelemetrySettings:
    return TelemetrySettings(
        rate_hz=args.rate_hz,
        idle_seconds=args.idle_seconds,
        min_energy_window_s=args.energy_window_s,
        cooldown_max_wait_s=args.cooldown_max_wait_s,
        idle_temperature_dir=args.idle_temperature_dir,
        sampler=args.sampler,
        # only the subcommands whose workload measures an active idle take the option
        active_idle_seconds=getattr(args, "active_idle_seconds", TelemetrySettings.active_idle_seconds),
    )
