"""Where a campaign files what it measured, and how the cluster is read back from it.

    <campaign>/raw/<node>/attempt<k>/node.json                    the node job's record (below)
    <campaign>/raw/<node>/attempt<k>/<backend>_gpu<g>_run<r>.csv  one GPU's reps of one run, with the
                                                                  sidecar and telemetry of any SGEMM job

Every try at a node gets a new attempt folder, so nothing a try left is ever overwritten: a node whose
latest attempt is measured is done; any other (failed, unavailable, or ended before it could record,
as a killed job does) is tried again in attempt k+1 by the next run. node.json holds `status`
(`measured`, `failed` or `unavailable`), `reason`, the node's `hostname`, the settings, and `gpus`: one
entry per GPU with its NVML index, name, UUID, serial, PCI bus id, VBIOS, power limit, driver and the time its
timed reps began (`start_time`, seconds since the epoch).
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..results import write_json

NODE_RECORD = "node.json"
JOB_RECORD = "job.json"  # the node job's host, process, start and SLURM job, written as it starts
ATTEMPT = re.compile(r"^attempt(\d+)$")
RAW_NAME = re.compile(r"^(?P<backend>\w+?)_gpu(?P<gpu>\w+)_run(?P<run>\d+)\.csv$")
# The reps columns a campaign reads (a raw file has more): fewer columns read faster at 10,000 GPUs.
REP_COLUMNS = ["profile", "device", "backend", "n", "run", "rep", "ms", "tflops", "power_w_median",
               "sm_clock_mhz_median", "temperature_c_median", "throttled", "clock_event_names"]  # fmt: skip
STATUSES = ("measured", "failed", "unavailable")
# Each GPU's identity in the reps table: column -> key of its entry in the node record.
IDENTITY = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_serial": "serial",
            "gpu_pci_bus_id": "pci_bus_id", "gpu_vbios": "vbios", "power_limit_w": "power_limit_w",
            "driver_version": "driver_version"}  # fmt: skip


RAW, TABLES = "raw", "tables"  # a campaign folder's raw files and its tables (aggregate.py)


def is_campaign(folder: Path | str) -> bool:
    """Whether a folder is a campaign's: it holds a node's record (raw/<node>/attempt<k>/node.json) or
    the campaign's tables (tables/campaign_gpus.csv), not a run's tables of one device."""
    folder = Path(folder)
    return (folder / TABLES / "campaign_gpus.csv").is_file() or any(
        (folder / RAW).glob(f"*/attempt*/{NODE_RECORD}")
    )


def raw_name(backend: str, gpu: int | str, run: int) -> str:
    return f"{backend}_gpu{gpu}_run{run}.csv"


def attempt_dir(raw: Path | str, node: str, attempt: int) -> Path:
    return Path(raw) / node / f"attempt{attempt}"


def write_record(folder: Path | str, record: dict[str, Any], name: str = NODE_RECORD) -> Path:
    """A node's record, written once (a second record for one attempt is refused, like any raw file)."""
    if record.get("status") not in STATUSES:
        raise ValueError(f"node status {record.get('status')!r} is not one of {STATUSES}")
    return write_json(Path(folder) / name, record)


def read_record(folder: Path | str, name: str = NODE_RECORD) -> dict[str, Any] | None:
    path = Path(folder) / name
    return json.loads(path.read_text()) if path.is_file() else None


def write_job(folder: Path | str, job: dict[str, Any], name: str = JOB_RECORD) -> Path:
    """The node job's note of where, when and as which process and SLURM job it runs, once."""
    return write_json(Path(folder) / name, job)


@dataclass(frozen=True)
class Attempt:
    node: str
    number: int
    folder: Path
    record: dict[str, Any] | None

    @property
    def status(self) -> str:
        """measured, failed, unavailable, or `no record`: the try ended before it could write one."""
        return str(self.record["status"]) if self.record else "no record"

    @property
    def reason(self) -> str:
        if self.record:
            return str(self.record.get("reason") or "")
        return "the job ended before recording (killed, out of time, or its node failed): see its log"


def nodes_of(raw: Path | str, nodes: list[str] | None = None) -> list[str]:
    """The nodes asked for, or where none are named, every node folder under raw/."""
    return nodes if nodes is not None else sorted(p.name for p in Path(raw).iterdir() if p.is_dir())


def attempts(raw: Path | str, node: str) -> list[Attempt]:
    """Every try at a node, oldest first."""
    folder = Path(raw) / node
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), path) for path in folder.iterdir() if (m := ATTEMPT.match(path.name))]
    return [Attempt(node, number, path, read_record(path)) for number, path in sorted(found)]


def planned_attempt(raw: Path | str, node: str) -> int:
    """The attempt this run builds for a node: its measured one if any (nothing to do), else a new one
    after every folder already there, so no try's files are ever written into again."""
    tries = attempts(raw, node)
    measured = [a.number for a in tries if a.status == "measured"]
    if measured:
        return measured[-1]
    return (tries[-1].number + 1) if tries else 1


def nodes_table(raw: Path | str, nodes: list[str]) -> pd.DataFrame:
    """One row per try at each node: its attempt, status, reason, GPUs and hostname; `current` marks the
    attempt this run reads (a measured one, else the latest)."""
    rows = []
    for node in nodes:
        tries = attempts(raw, node)
        if not tries:
            rows.append({"node": node, "attempt": 0, "status": "not tried", "reason": "", "current": True})
            continue
        measured = [a for a in tries if a.status == "measured"]
        current = (measured or tries)[-1]
        for attempt in tries:
            record = attempt.record or {}
            rows.append({
                "node": node, "attempt": attempt.number, "status": attempt.status, "reason": attempt.reason,
                "hostname": record.get("hostname"), "gpus": len(record.get("gpus", [])),
                "current": attempt is current,
            })  # fmt: skip
    return pd.DataFrame(rows)


def _gpu_identity(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The node record's GPUs by NVML index (as the raw files' `device` column writes it)."""
    return {str(gpu["index"]): gpu for gpu in record.get("gpus", [])}


def _energy_per_rep(path: Path) -> float:
    """The run's energy per product from its sidecar (one energy window per run), NaN if none."""
    sidecar = json.loads(path.with_name(f"{path.stem}.provenance.json").read_text())
    measurement = sidecar.get("measurement", {})
    energies = list(measurement.get("energy", {}).values())
    return float(energies[0].get("energy_per_op_j", np.nan)) if len(energies) == 1 else np.nan


def _read_tables(paths: list[Path]) -> pd.DataFrame:
    """Many raw tables as one: files of one header are joined and parsed at once (one pandas parse per
    header instead of one per file, which at 10,000 GPUs is most of the time), each row tagged with
    its file's position in `paths` (column `file`)."""
    by_header: dict[bytes, list[tuple[int, bytes, int]]] = {}
    for position, path in enumerate(paths):
        header, _, body = path.read_bytes().partition(b"\n")
        body = body if body.endswith(b"\n") or not body else body + b"\n"
        by_header.setdefault(header, []).append((position, body, body.count(b"\n")))
    frames = []
    for header, files in by_header.items():
        columns = [c for c in header.decode().strip().split(",") if c in REP_COLUMNS]
        text = header + b"\n" + b"".join(body for _, body, _ in files)
        frame = pd.read_csv(io.BytesIO(text), usecols=columns)
        counts = [count for _, _, count in files]
        if len(frame) != sum(counts):  # a quoted line break: parse these files one by one
            frame = pd.concat(
                [pd.read_csv(paths[p], usecols=columns) for p, _, _ in files], ignore_index=True
            )
            counts = None
        positions = [p for p, _, _ in files]
        frame["file"] = (
            np.repeat(positions, counts)
            if counts
            else np.concatenate([np.full(len(pd.read_csv(paths[p], usecols=["rep"])), p) for p in positions])
        )
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def read_campaign(raw: Path | str, nodes: list[str] | None = None) -> pd.DataFrame:
    """Every rep of every GPU of every measured node, with the node and each GPU's identity from its
    node record (UUID, serial, PCI bus id, VBIOS, power limit, driver, start time), and each run's
    energy per product from its sidecar."""
    raw = Path(raw)
    nodes = nodes_of(raw, nodes)
    paths: list[Path] = []
    files: list[dict[str, Any]] = []
    for node in nodes:
        measured = [a for a in attempts(raw, node) if a.status == "measured"]
        if not measured:
            continue
        record = measured[-1].record or {}
        identity = _gpu_identity(record)
        for path in sorted(measured[-1].folder.glob("*.csv")):
            match = RAW_NAME.match(path.name)
            if not match or path.name.endswith(".telemetry.csv"):
                continue
            gpu = identity.get(match.group("gpu"), {})
            paths.append(path)
            files.append({
                # the device as the file names it: a GPU's NVML index, or a cpu stand-in's number (whose
                # reps all say 'cpu')
                "device": match.group("gpu"),
                "node": node, "hostname": record.get("hostname", node), "source_file": path.name,
                "energy_per_rep_j": _energy_per_rep(path), "start_time": gpu.get("start_time", np.nan),
                **{column: gpu.get(key) for column, key in IDENTITY.items()},
            })  # fmt: skip
    if not paths:
        return pd.DataFrame(columns=[*REP_COLUMNS, "node", *IDENTITY])
    reps = _read_tables(paths)
    per_file = pd.DataFrame(files)
    tagged = per_file.iloc[reps["file"].to_numpy()].reset_index(drop=True)
    return pd.concat([reps.drop(columns=["file", "device"]), tagged], axis=1)
