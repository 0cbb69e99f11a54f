"""Every file the project writes goes through here: raw results and derived outputs.

A raw file is written under a temporary name and then hard-linked to its final name, which fails if that
name exists: a measurement on disk is never replaced, even by two jobs racing for the same path.

A derived file (a table, a plot, a verdict, a pack, a comparison) may be remade, so it is written to a
temporary name beside it and renamed over the old one: a step that fails leaves the last good file in
place. No derived writer may land on a raw file (one under a `raw/` folder, one with a provenance sidecar
beside it, or a sidecar itself), whatever the file's permissions say: the run often has root's rights.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import RawFileError, ResultExistsError

# What a raw file's provenance sidecar ends in.
SIDECAR_SUFFIX = ".provenance.json"
# The folder of a study that holds its raw files, and how far above a file it is looked for
RAW_FOLDER = "raw"
RAW_DEPTH = 3


def sidecar_path(path: Path | str) -> Path:
    """`x.csv` -> `x.provenance.json` (the provenance of one raw file)."""
    path = Path(path)
    return path.with_name(f"{path.stem}{SIDECAR_SUFFIX}")


def ensure_absent(*paths: Path | str) -> None:
    """Fail before measuring when a result already exists, rather than after."""
    for path in paths:
        for candidate in (Path(path), sidecar_path(path)):
            if candidate.exists():
                raise ResultExistsError(
                    f"{candidate} already exists; raw results are never overwritten. Move it away, or "
                    "write this run elsewhere with --config results_dir=<new folder>."
                )


def _publish(data: bytes, path: Path) -> None:
    """Write bytes to a temporary file beside `path`, then link it into place without overwriting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError as err:
            raise ResultExistsError(f"{path} appeared while measuring; kept the existing file") from err
    finally:
        os.unlink(tmp)


def write_raw(frame: pd.DataFrame, path: Path | str, provenance: dict[str, Any]) -> Path:
    """Write a raw table and its provenance sidecar, refusing to overwrite either."""
    path = Path(path)
    ensure_absent(path)
    sidecar = sidecar_path(path)
    _publish(json.dumps({**provenance, "file": path.name}, indent=2, default=str).encode(), sidecar)
    _publish(frame.to_csv(index=False).encode(), path)
    return path


def write_json(path: Path | str, record: dict[str, Any]) -> Path:
    """Write a JSON record as a raw file is written: atomically, and never over an existing one."""
    path = Path(path)
    ensure_absent(path)
    _publish(json.dumps(record, indent=2, default=str).encode(), path)
    return path


def is_raw(path: Path | str) -> bool:
    """Whether `path` holds (or would hold) a measurement: under a `raw/` folder of a run, a provenance
    sidecar, or a file with a sidecar beside it."""
    path = Path(path)
    # A run keeps its measurements at <results>/<device>/<study>/raw/<file> (a level or two deeper for
    # traces); only the nearest folders are read, so a user's own folder named raw above the results
    # does not forbid writing tables.
    return (
        RAW_FOLDER in path.parent.parts[-RAW_DEPTH:]
        or path.name.endswith(SIDECAR_SUFFIX)
        or sidecar_path(path).exists()
    )


def refuse_raw(path: Path | str, option: str = "--out") -> None:
    """Stop a derived writer aimed at a raw file, naming the option and the file."""
    if is_raw(path):
        raise ResultExistsError(
            f"{option} {path}: that is a raw measurement (or where one belongs), and raw files are never "
            "written over; name a file outside the run's raw/ folders, e.g. under tables/"
        )


def write_derived(path: Path | str, data: bytes | str, option: str = "--out") -> Path:
    """Write a derived file atomically (temporary name, then rename), refusing to land on a raw file."""
    return write_derived_with(
        path, lambda tmp: tmp.write_bytes(data.encode() if isinstance(data, str) else data), option
    )


def write_derived_with(path: Path | str, writer: Callable[[Path], Any], option: str = "--out") -> Path:
    """Let `writer` fill a temporary file beside `path` (same suffix, so tools that read the suffix, as
    savefig and tarfile do, write the right format), then rename it into place. A writer that fails
    leaves the previous file untouched and no temporary behind."""
    path = Path(path)
    refuse_raw(path, option)
    if path.is_dir():
        raise ResultExistsError(f"{option} {path}: that is a folder; name a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(
        prefix=f".{path.stem}.", suffix=f".tmp{''.join(path.suffixes)}", dir=path.parent
    )
    os.close(fd)
    tmp = Path(name)
    try:
        writer(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_table(frame: pd.DataFrame, path: Path | str, option: str = "--out") -> Path:
    """A derived CSV table, written atomically and never over a raw file."""
    return write_derived(path, frame.to_csv(index=False), option)


# The column every raw table of a study starts with (the device profile it was measured under)
RAW_KEY_COLUMNS = ("profile",)


def how_to_go_on(path: Path) -> str:
    """What a user can do about a raw file that cannot be read: what the sidecar says it was, and how to
    measure the point again without losing the file."""
    sidecar = sidecar_path(path)
    recorded = f"{sidecar} records how it was measured; " if sidecar.is_file() else ""
    return (
        f"{recorded}to measure this point again, run `snakemake --forcerun {path}` (the raw-data check moves "
        "the old file aside to <results_dir>/replaced/ first; nothing is deleted)"
    )


def read_raw(path: Path | str, required: tuple[str, ...] = RAW_KEY_COLUMNS) -> pd.DataFrame:
    """A raw table, or an error that names the file, says what is wrong with it (missing, empty,
    truncated or unreadable, missing columns) and how to go on, instead of a parser's traceback."""
    path = Path(path)
    frame, problem = _parse_raw(path, required)
    if frame is None:
        raise RawFileError(f"{path}: {problem}; {how_to_go_on(path)}")
    return frame


def raw_problem(
    path: Path | str, required: tuple[str, ...] = RAW_KEY_COLUMNS, rows_required: bool = True
) -> str | None:
    """What makes a raw table unreadable, in words, or None where it reads as a table with `required`
    (and at least one row, unless `rows_required` is False: a telemetry trace may hold none)."""
    return _parse_raw(Path(path), required, rows_required)[1]


def _parse_raw(
    path: Path, required: tuple[str, ...], rows_required: bool = True
) -> tuple[pd.DataFrame | None, str | None]:
    if not path.is_file():
        return None, "no such file"
    if path.stat().st_size == 0:
        return None, "the file is empty (a measurement cut off before its first row?)"
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return None, f"not a readable CSV table, truncated or damaged ({first})"
    missing = [column for column in required if column not in frame.columns]
    if missing:
        return None, f"columns {missing} missing (found {list(frame.columns)[:8]})"
    if frame.empty and rows_required:
        return None, "a header but no rows"
    return frame, None


def read_sidecar(path: Path | str) -> dict[str, Any]:
    """A raw file's provenance record, or an error naming the sidecar when it is absent or damaged."""
    sidecar = sidecar_path(path)
    try:
        with sidecar.open() as fh:
            record = json.load(fh)
    except FileNotFoundError as err:
        raise RawFileError(f"{sidecar}: the provenance sidecar of {path} is missing") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RawFileError(f"{sidecar}: not readable JSON ({err}); {how_to_go_on(Path(path))}") from err
    if not isinstance(record, dict):
        raise RawFileError(f"{sidecar}: holds {type(record).__name__}, not a provenance record")
    return record
