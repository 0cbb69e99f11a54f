"""Where a claim's sides ran: whether the points one claim compares shared a GPU round by round, and
what else was measured beside them (docs/design.md, claim-affine placement; issue 60).

Two cards of one model differ (1.9% in SGEMM rate across four H100s of one node), and a ratio or
difference cancels its card's offset only where both sides ran on one card. With `placement:
claim_groups` a claim group shares a GPU within a round and may move between rounds; this says, per
claim, what happened.

A side is what one selection of a claim reads: its measure, the point it divides by or subtracts, each
point of an ordering, a speedup row's baseline, and for a scaled claim the reference rates: those of
the GPUs its points ran on where the run measured rates per GPU (scaling.rates_for), a side that never
sits apart from them, else the whole table's. Its
processes are (round, GPU UUID) pairs taken from the rows it reads: an across-process or speedup table's
`runs` and `gpu_uuids` (`baseline_runs` and `baseline_gpu_uuids` for a speedup's baseline), else a study
table's `run` and `gpu_uuid`, one process a row (round 0, "every round", where the table has no `run`:
a job measured once, as the reference rates and SGEMM points are). A column that is absent reads as
unknown, never as an error: tables older than the UUID columns still give a verdict.

What ran beside them comes from the raw files' provenance sidecars (provenance.begin/finish): each
records `start_time` when its job began (before its idle window and warm-up) and `end_time` when it
finished, so a job's window covers everything it did on its GPU. A side's own processes are found among
them by study, GPU, round and the point's values the sidecar's `workload` records; every other job
whose window overlaps one of theirs ran beside it. `placement.json` (placement.packing.write) names the
GPUs the run placed claim groups over.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import pandas as pd

from ..compare.points import normal, short_uuid, uuids_of
from .claims import Claim, Selection
from .measured import SIDECARS, TRACE_SIDECAR
from .outcome import Outcome
from .reading import selected_rows
from .scaling import ReferenceRates, rates_for, row_gpus
from .statuses import SCALED

# A speedup row's baseline point: the column of the fused side's point each baseline column replaces.
BASELINE_OF = {"mode": "baseline", "step": "baseline_step", "b": "baseline_b"}
# Columns that name a row's processes or its figure rather than its point.
NOT_POINT = {"metric", "statistic", "value", "unit", "per_process", "interval", "process_values", "reason"}
EVERY_ROUND = 0  # a side measured once (its table has no `run`): beside every round of the others
REFERENCE_TABLE = "reference"
PLACEMENT_FILE = "placement.json"


@dataclass(frozen=True, order=True)
class Process:
    run: int
    gpu: str  # NVML UUID; '' where its row names none (the CPU, an older table)


@dataclass(frozen=True)
class Side:
    label: str
    study: str
    point: dict[str, str]  # the point's values its rows share (normalised as compare.points.normal)
    processes: tuple[Process, ...]
    # taken from the other sides' own GPUs (the reference rates of the cards the points ran on): it adds
    # no card of its own, so it never makes the sides read as apart
    own_gpus: bool = False


@dataclass(frozen=True)
class Job:
    """One raw file's process as its provenance sidecar recorded it."""

    name: str  # its path under the results folder
    study: str
    gpu: str
    run: int
    workload: dict[str, str]
    start: datetime
    end: datetime

    def overlaps(self, other: Job) -> bool:
        return self.start < other.end and other.start < self.end


def jobs_of(results: Path | str | None) -> list[Job]:
    """Every measuring job under a device's results folder with start and end times (a sidecar without
    them, or unreadable, is left out)."""
    if results is None:
        return []
    results = Path(results)
    jobs = []
    for path in sorted(results.glob(SIDECARS)):
        if path.name.endswith(TRACE_SIDECAR):  # a process's telemetry trace: the job itself is counted
            continue
        try:
            record = json.loads(path.read_text())
            start = datetime.fromisoformat(str(record["start_time"]))
            end = datetime.fromisoformat(str(record.get("end_time") or record["start_time"]))
        except (OSError, ValueError, KeyError):
            continue
        workload = {str(k): normal(v) for k, v in (record.get("workload") or {}).items()}
        gpu = (record.get("gpus") or [{}])[0].get("uuid") or ""
        run = int(float(workload.pop("run", "") or 1))
        name = str(path.relative_to(results))
        jobs.append(Job(name, name.split("/", 1)[0], str(gpu), run, workload, start, end))
    return jobs


def placement_gpus(results: Path | str | None) -> list[int]:
    """The GPUs the run placed claim groups over (placement.json's `gpus`); none without the file."""
    path = Path(results) / PLACEMENT_FILE if results is not None else None
    if path is None or not path.is_file():
        return []
    try:
        return [int(g) for g in json.loads(path.read_text()).get("gpus", [])]
    except (OSError, ValueError):
        return []


def _processes(rows: pd.DataFrame, prefix: str = "") -> tuple[Process, ...]:
    """The (round, GPU) of every process behind the rows: `<prefix>runs` with `<prefix>gpu_uuids` in
    the same order, else (no prefix) each row's `run` and `gpu_uuid`."""
    found: set[Process] = set()
    if f"{prefix}runs" in rows:
        uuids = rows.get(f"{prefix}gpu_uuids", pd.Series("", index=rows.index))
        for runs, gpus in zip(rows[f"{prefix}runs"], uuids, strict=True):
            numbers = [int(float(r)) for r in normal(runs).split(",") if r.strip()]
            named = normal(gpus).split(",") if normal(gpus) else []
            named = named if len(named) == len(numbers) else [""] * len(numbers)
            found |= {Process(run, gpu.strip()) for run, gpu in zip(numbers, named, strict=True)}
    elif not prefix:
        runs = _column(rows, "run", EVERY_ROUND)
        for run, gpu in zip(runs, _column(rows, "gpu_uuid", ""), strict=True):
            found.add(Process(int(float(normal(run) or EVERY_ROUND)), normal(gpu)))
    return tuple(sorted(found))


def _column(rows: pd.DataFrame, name: str, default: object = "") -> pd.Series:
    """A column of the rows, or `default` in every row where the table has none (an older table)."""
    return rows[name] if name in rows else pd.Series(default, index=rows.index)


def _point(rows: pd.DataFrame) -> dict[str, str]:
    """The values every row shares, but those that name processes or the figure."""
    point = {}
    for column in rows.columns:
        if column in NOT_POINT or column.endswith(("runs", "gpu_uuids", "gpu_uuid")) or column == "run":
            continue
        values = {normal(v) for v in rows[column]}
        if len(values) == 1:
            point[column] = values.pop()
    return point


def _sides_of_rows(rows: pd.DataFrame, study: str) -> list[Side]:
    """The side the rows are, and a speedup row's baseline side."""
    point = _point(rows)
    study = point.get("study") or study
    sides = [Side("", study, point, _processes(rows))]
    if "baseline_runs" in rows:
        baseline = {k: v for k, v in point.items() if k not in BASELINE_OF.values()}
        baseline.update({k: point[v] for k, v in BASELINE_OF.items() if v in point})
        sides.append(Side("", study, baseline, _processes(rows, "baseline_")))
    return sides


def sides_of(claim: Claim, tables: dict[str, pd.DataFrame], scaled: bool = False) -> list[Side]:
    """The sides a claim reads, labelled by what tells them apart (the values they differ in); the
    reference rates it is scaled by (claim_references) are a side of a claim scaled by them."""
    selections: list[Selection] = (
        [claim.measure.with_where(where) for where in claim.order] if claim.order else [claim.measure]
    )
    selections += [other for other in (claim.divide_by, claim.subtract) if other is not None]
    sides: list[Side] = []
    for selection in selections:
        table = tables.get(selection.table)
        rows = selected_rows(selection, table) if table is not None else None
        if rows is not None and not rows.empty:
            sides += _sides_of_rows(rows, claim.study)
    named = {key for selection in selections for key in selection.where} | set(BASELINE_OF)
    sides = _labelled(sides, named)
    reference = tables.get(REFERENCE_TABLE)
    if scaled and reference is not None and not reference.empty:
        rates = rates_for(reference, _gpus_of(sides))
        rows = reference[row_gpus(reference).isin(rates.gpus)]
        # the rows the rates came from: a table without UUIDs stands whole
        processes = _processes(rows if rates.gpus else reference)
        sides.append(Side("reference rates", REFERENCE_TABLE, {}, processes, rates.own))
    return sides


def _gpus_of(sides: list[Side]) -> set[str]:
    """The GPU UUIDs the sides' processes ran on (none where their rows name none)."""
    return {process.gpu for side in sides for process in side.processes if process.gpu}


def claim_references(claim: Claim, tables: dict[str, pd.DataFrame]) -> ReferenceRates:
    """The reference rates a claim is scaled by: those of the GPUs its measured rows ran on, else the
    whole table (scaling.rates_for says which, and why)."""
    return rates_for(tables.get(REFERENCE_TABLE), _gpus_of(sides_of(claim, tables)))


def _labelled(sides: list[Side], keys: Iterable[str]) -> list[Side]:
    """Each side named by the values of `keys` the sides differ in ('model=deit-t'; 'side 2' where
    none tells them apart)."""
    differ = [
        key
        for key in sorted(keys)
        if all(key in side.point for side in sides) and len({side.point[key] for side in sides}) > 1
    ]
    return [
        replace(side, label=", ".join(f"{k}={side.point[k]}" for k in differ) or f"side {i + 1}")
        for i, side in enumerate(sides)
    ]


def _gpu(uuid: str) -> str:
    return short_uuid(uuid) if uuid else "no GPU"


def sharing(sides: list[Side], run_gpus: set[str]) -> str:
    """Whether the sides shared a GPU, round by round (`run_gpus`: every GPU UUID the run measured on);
    '' where the claim read no rows."""
    processes = [p for side in sides for p in side.processes]
    if not processes:
        return ""
    if len(run_gpus) == 1:  # whatever its rows record, every process ran on it
        return f"one GPU in the run ({_gpu(next(iter(run_gpus)))})"
    if not run_gpus:
        return "no GPU in the run (the CPU)"
    used = sorted({p.gpu for p in processes if p.gpu})
    if not used:
        return "GPUs of its processes not recorded (tables aggregated before the UUID columns)"
    compared = [side for side in sides if not side.own_gpus]
    if len(compared) == len(sides) or not compared:
        return _apart(sides)
    return "; ".join([_apart(compared), *(_taken_from_own(side) for side in sides if side.own_gpus)])


def _taken_from_own(side: Side) -> str:
    """A side taken from the other sides' own GPUs (the reference rates of the claim's cards)."""
    gpus = _gpus_of([side])
    if len(gpus) > 1:
        return f"{side.label}: the median of the same {len(gpus)} GPUs'"
    return f"{side.label} of the same GPU"


def _apart(sides: list[Side]) -> str:
    """Whether the sides ran on one GPU in every round, or which ran apart in which round."""
    processes = [p for side in sides for p in side.processes]
    used = sorted({p.gpu for p in processes if p.gpu})
    if len(sides) == 1:
        count = "one GPU" if len(used) == 1 else f"{len(used)} GPUs"
        return f"its processes on {count} ({', '.join(map(_gpu, used))})"
    rounds = sorted({p.run for p in processes if p.run != EVERY_ROUND}) or [EVERY_ROUND]
    apart = []
    for round_ in rounds:
        per_side = [{p.gpu for p in side.processes if p.run in (round_, EVERY_ROUND)} for side in sides]
        if all(per_side) and len(set().union(*per_side)) > 1:
            named = ", ".join(
                f"{side.label} {'/'.join(map(_gpu, sorted(gpus)))}"
                for side, gpus in zip(sides, per_side, strict=True)
            )
            apart.append(f"{'round ' + str(round_) if round_ else 'its one round'}: {named}")
    if apart:
        return f"sides on different GPUs in {'; '.join(apart)}"
    both = "both sides" if len(sides) == 2 else f"its {len(sides)} sides"
    return f"{both} on one GPU in every round ({', '.join(map(_gpu, used))})"


def _owns(job: Job, side: Side, process: Process) -> bool:
    """Whether a job is one of a side's processes: its study, GPU (any, where the row names none), round
    and the point's values."""
    if job.study != side.study or (process.gpu and job.gpu != process.gpu):  # '': an older table's
        return False
    if process.run != EVERY_ROUND and job.run != process.run:
        return False
    return all(job.workload[k] == v for k, v in side.point.items() if v and job.workload.get(k))


def beside(sides: list[Side], jobs: list[Job], placed_over: list[int]) -> str:
    """What other jobs ran while a side's processes did, by GPU and study; '' where the claim read no
    rows."""
    if not any(side.processes for side in sides):
        return ""
    own = [job for job in jobs if any(_owns(job, s, p) for s in sides for p in s.processes)]
    if not own:
        return "beside them: no provenance times found for its processes"
    names = {job.name for job in own}
    others = [job for job in jobs if job.name not in names and any(job.overlaps(o) for o in own)]
    if not others:
        return "beside them: nothing else measured at the same time"
    own_gpus = {job.gpu for job in own}
    by_gpu: dict[str, Counter[str]] = {}
    for job in others:
        by_gpu.setdefault(job.gpu, Counter())[job.study] += 1
    parts = []
    for gpu, studies in sorted(by_gpu.items()):
        where = "the CPU" if not gpu else _gpu(gpu) + (" (one of its own)" if gpu in own_gpus else "")
        count = sum(studies.values())
        per_study = ", ".join(f"{study} {n}" for study, n in sorted(studies.items()))
        parts.append(f"{count} job{'s' if count != 1 else ''} on {where} ({per_study})")
    placed = (
        f" (claim groups placed over GPUs {', '.join(map(str, placed_over))}: {PLACEMENT_FILE})"
        if len(placed_over) > 1
        else ""
    )
    return f"beside them: {'; '.join(parts)}{placed}"


def describe(
    outcome: Outcome,
    tables: dict[str, pd.DataFrame],
    jobs: list[Job],
    placed_over: list[int],
    run_gpus: set[str],
) -> str:
    """The claim's line: whether its sides shared a GPU, and what ran beside them."""
    sides = sides_of(outcome.claim, tables, scaled=outcome.judged == SCALED)
    shared = sharing(sides, run_gpus)
    return "; ".join(part for part in (shared, beside(sides, jobs, placed_over)) if part)


def described(
    outcomes: list[Outcome], tables: dict[str, pd.DataFrame], results: Path | None
) -> list[Outcome]:
    """The outcomes with where their sides ran (Outcome.sides), from the tables and the provenance of
    the raw files under `results` (the device's folder; without it, from the tables alone)."""
    jobs = jobs_of(results)
    placed_over = placement_gpus(results)
    # the GPUs the sidecars name, else (no raw files beside the tables) those the tables name
    run_gpus = {job.gpu for job in jobs if job.gpu} or {
        uuid for table in tables.values() for uuid in uuids_of(table.to_dict("records")).split(";") if uuid
    }
    return [replace(o, sides=describe(o, tables, jobs, placed_over, run_gpus)) for o in outcomes]
