"""How a run was measured, for the verdict's head: the plan (quick or full), the commit and whether the
tree was dirty, torch, CUDA and driver versions, when, on which GPUs, and how many processes each study
ran. Read from the provenance sidecars of the run's raw files (results/<device>/<study>/raw/) and the
resolved configs they name (results/<device>/config/<config_hash>.yaml), so the verdict states what the
measurements themselves recorded, not what the machine drawing the verdict has installed, and a config
key the measurements do not depend on reruns nothing."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SIDECARS = "*/raw/**/*.provenance.json"
TRACE_SIDECAR = ".telemetry.provenance.json"
LISTED_GPUS = 8  # GPUs named one by one in the head; more (a campaign's cluster) are counted by name
QUICK_PLAN, FULL_PLAN = "quick", "full"  # a run's plan, as its resolved config says (config key quick)


@dataclass(frozen=True)
class HowMeasured:
    plan: str = ""  # QUICK_PLAN, FULL_PLAN, or each with its raw files where a folder holds both; "" unknown
    commits: tuple[str, ...] = ()  # "<commit> (dirty)" or "<commit>", each once
    torch: tuple[str, ...] = ()
    cuda: tuple[str, ...] = ()  # the CUDA torch was built with
    drivers: tuple[str, ...] = ()  # "<driver> (CUDA <driver's CUDA>)"
    first: str = ""  # first start and last end of a measurement (ISO, UTC)
    last: str = ""
    gpus: tuple[str, ...] = ()  # "<NVML name> <UUID>"
    processes: dict[str, int] = field(default_factory=dict)  # study -> raw files (one process each)

    def lines(self) -> list[str]:
        """The head of the verdict in short lines (nothing where nothing was recorded)."""
        if not (self.plan or self.commits or self.processes):
            return ["How measured: no provenance found (no raw files with sidecars beside these tables)."]

        def listed(values: tuple[str, ...]) -> str:
            return ", ".join(values) or "not recorded"

        studies = ", ".join(f"{study} {count}" for study, count in sorted(self.processes.items()))
        return [
            f"Plan: {self.plan or 'not recorded'}"
            + (
                " (quick: fewer sizes, reps and processes; see the README)" if self.plan == QUICK_PLAN else ""
            ),
            f"Commit: {listed(self.commits)}",
            f"torch {listed(self.torch)}, CUDA {listed(self.cuda)}, driver {listed(self.drivers)}",
            f"Measured {self.first or '?'} to {self.last or '?'} (UTC)",
            f"GPUs: {self._gpus() if self.gpus else 'none (the CPU)'}",
            f"Processes (raw files) per study: {studies or 'none'}; each claim names the processes behind "
            "each side of its figure",
        ]

    def _gpus(self) -> str:
        """Each GPU by name and UUID; a cluster's (more than LISTED_GPUS) counted by name, as its
        campaign's tables name each one."""
        if len(self.gpus) <= LISTED_GPUS:
            return ", ".join(self.gpus)
        names = Counter(gpu.rsplit(" ", 1)[0] for gpu in self.gpus)
        counted = ", ".join(f"{count} {name}" for name, count in names.most_common())
        return f"{counted} (each by UUID in the tables)"


def _unique(values: list[Any]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(v) for v in values if v not in (None, "")))


def _commit(git: dict[str, Any]) -> str | None:
    commit = git.get("commit")
    if not commit:
        return None
    if git.get("dirty") is None:  # a source archive's commit: whether files changed since is unknown
        return f"{commit[:12]} (from a source archive: changes after unpacking unknown)"
    return f"{commit[:12]} (dirty)" if git.get("dirty") else commit[:12]


def plan_of(results: Path, config_hash: str | None) -> str:
    """quick or full, from a resolved config; "" where it is not there."""
    if not config_hash:
        return ""
    path = results / "config" / f"{config_hash}.yaml"
    if not path.is_file():
        return ""
    config = yaml.safe_load(path.read_text()) or {}
    return QUICK_PLAN if config.get("quick") else FULL_PLAN


def _plans(results: Path, hashes: list[str | None]) -> str:
    """The plan the raw files were measured under: one word, or each plan with its raw files."""
    plans = Counter(plan_of(results, digest) for digest in hashes)
    plans.pop("", None)
    if len(plans) <= 1:
        return next(iter(plans), "")
    return ", ".join(f"{plan} ({n} raw file{'s' if n != 1 else ''})" for plan, n in plans.most_common())


def how_measured(
    results: Path | str | None, sidecars: str = SIDECARS, study: str | None = None
) -> HowMeasured:
    """What the sidecars under `results` (one device's folder) recorded, the plan from the resolved
    configs they name. `sidecars`: which of its sidecars (a campaign's: campaign/<name>/raw/**/...), each
    counted under `study`, else under the first folder of its path."""
    if results is None:
        return HowMeasured()
    results = Path(results)
    records = []
    studies: Counter[str] = Counter()
    for path in sorted(results.glob(sidecars)):
        if path.name.endswith(TRACE_SIDECAR):  # a process's telemetry trace: its table counts it
            continue
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
        studies[study or path.relative_to(results).parts[0]] += 1
    gpus = [gpu for record in records for gpu in record.get("gpus") or []]
    software = [record.get("software") or {} for record in records]
    starts = sorted(str(r["start_time"]) for r in records if r.get("start_time"))
    ends = sorted(str(r["end_time"]) for r in records if r.get("end_time"))
    return HowMeasured(
        plan=_plans(results, [record.get("config_hash") for record in records]),
        commits=_unique([_commit(record.get("git") or {}) for record in records]),
        torch=_unique([s.get("torch") for s in software]),
        cuda=_unique([s.get("torch_cuda") for s in software]),
        drivers=_unique(
            [
                f"{gpu['driver_version']} (CUDA {gpu.get('cuda_driver_version')})"
                for gpu in gpus
                if gpu.get("driver_version")
            ]
        ),
        first=starts[0] if starts else "",
        last=(ends or starts)[-1] if (ends or starts) else "",
        gpus=tuple(sorted(_unique([f"{gpu.get('name')} {gpu.get('uuid')}" for gpu in gpus]))),
        processes=dict(studies),
    )
