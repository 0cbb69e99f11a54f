"""Raw measurements a planned run would replace: found before any job starts, refused unless asked for.

Snakemake reruns a job whose params, code or inputs changed since it ran (a quick run after a full one,
another seed or cool-down), and deletes the job's outputs first. Its `protected()` flag does not stop
that where the run has root's rights, as on most GPU hosts and in containers: Snakemake asks
`os.access(path, W_OK)`, which grants root every file. So the run reads its own plan before the first
job starts (onstart, common.smk) and

- stops when a job would replace raw files for any reason but an explicit request, naming the files,
  the config keys whose values changed since they were measured, and how to measure again;
- moves the raw files of forced jobs (--forcerun, -R, --forceall) and of jobs Snakemake marked
  incomplete (a killed run) into `<results_dir>/replaced/<device>/<time>/` first, so that what was
  measured is kept whatever the new job does.

A dry-run only says what the real run would do (runplan.smk).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import provenance, results

# a key the config the files were measured with, or this run's, lacks
NOT_SET = "(not set)"
# a config key (dotted), its values (JSON) in the configs raw files were measured with, its value now
Difference = tuple[str, set[str], str]


@dataclass(frozen=True)
class Replacement:
    """One planned job whose raw outputs already exist."""

    rule: str
    files: tuple[str, ...]
    # Snakemake's reasons for running the job ("params have changed since last execution", ...)
    reasons: tuple[str, ...]
    forced: bool = False
    incomplete: bool = False
    # the params values only the earlier run had, and only this run has (Snakemake's ParamsChange)
    params_before: tuple[str, ...] = field(default_factory=tuple)
    params_now: tuple[str, ...] = field(default_factory=tuple)

    @property
    def requested(self) -> bool:
        """Replacing is asked for (forced), or what is there is unfinished (incomplete): set it aside.
        Any other reason (a setting, the code or an input changed) stops the run."""
        return self.forced or (self.incomplete and self.reasons == ("incomplete output files",))


def from_dag(dag: Any) -> list[Replacement]:
    """The planned jobs of a Snakemake DAG whose protected (raw) outputs exist already."""
    found = []
    for job in dag.needrun_jobs(exclude_finished=False):
        existing = sorted(str(f) for f in job.output if f in job.protected_output and os.path.exists(f))
        if not existing:
            continue
        reason = dag.reason(job)
        params = reason.params_changed
        found.append(
            Replacement(
                rule=job.rule.name,
                files=tuple(existing),
                reasons=tuple(reason.get_names()),
                forced=bool(reason.forced),
                incomplete=bool(reason.incomplete_output),
                params_before=tuple(sorted(map(str, params.only_old))),
                params_now=tuple(sorted(map(str, params.only_new))),
            )
        )
    return found


def _differences(files: Iterable[str], device_results: Path, config: Mapping[str, Any]) -> list[Difference]:
    """(key, its values in the configs the files were measured with, its value now) for each config key
    (provenance.flat_config, values as JSON) that differs between the configs the files' sidecars name
    by config_hash (kept as config/<hash>.yaml) and this run's; none where no sidecar names a kept one."""
    now = provenance.flat_config(json.loads(json.dumps(config, default=str)))
    sidecars = (Path(f) for f in files if f.endswith(results.SIDECAR_SUFFIX) and Path(f).is_file())
    digests = {
        str(digest) for path in sidecars if (digest := json.loads(path.read_text()).get("config_hash"))
    }
    before = provenance.recorded_config_values(device_results, digests)
    return [
        (key, before.get(key, {NOT_SET}), now.get(key, NOT_SET))
        for key in sorted({*before, *now})
        if before and before.get(key) != {now.get(key)}
    ]


def changed_settings(differences: list[Difference]) -> list[str]:
    """'quick: false -> true' for each of _differences'."""
    return [f"{key}: {' / '.join(sorted(before))} -> {now}" for key, before, now in differences]


def config_argument(key: str, value: str) -> str:
    """`--config` text, quoted for a shell, that sets the dotted `key` to `value` (JSON): quick=false,
    'gpus=[0, 1]', 'telemetry={rate_hz: 50}' (Snakemake merges a nested mapping into the config)."""
    loaded = json.loads(value)
    text = loaded if isinstance(loaded, str) and re.fullmatch(r"[\w./-]+", loaded) else value
    top, *nested = key.split(".")
    for part in reversed(nested):
        text = f"{{{part}: {text}}}"
    return shlex.quote(f"{top}={text}")


def settings_measured_with(differences: list[Difference]) -> list[str] | None:
    """The `--config` arguments that set back each of _differences' keys to the one value the files were
    measured with; None where that cannot be said (a key had several values, or none)."""
    if not differences or any(len(before) != 1 or NOT_SET in before for _, before, _ in differences):
        return None
    return [config_argument(key, next(iter(before))) for key, before, _ in differences]


def _points(replacements: list[Replacement], shown: int) -> list[str]:
    lines = []
    for item in replacements[:shown]:
        table = next((f for f in item.files if not f.endswith(results.SIDECAR_SUFFIX)), item.files[0])
        lines.append(f"  {table} (rule {item.rule}): {'; '.join(item.reasons)}")
    if len(replacements) > shown:
        lines.append(f"  ... and {len(replacements) - shown} more points")
    return lines


def refusal(
    replacements: list[Replacement],
    device_results: Path,
    config: Mapping[str, Any],
    shown: int = 8,
    dry_run: bool = False,
) -> str | None:
    """The message that stops a run which would replace raw files without being asked to (a dry-run's
    says that a run would stop); None if none."""
    refused = [r for r in replacements if not r.requested]
    if not refused:
        return None
    files = [f for r in refused for f in r.files]
    differences = _differences(files, device_results, config)
    settings = changed_settings(differences)
    params = (
        sorted({p for r in refused for p in r.params_before}),
        sorted({p for r in refused for p in r.params_now}),
    )
    lead = "a run would stop" if dry_run else "stopped before any job"
    lines = [
        f"gpurepro: {lead}: this run would replace {len(files)} raw files of "
        f"{len(refused)} points measured earlier in {device_results} (raw data is never replaced "
        "silently):",
        *_points(refused, shown),
    ]
    if settings:
        lines += [
            "The settings they were measured with differ from this run's:",
            *(f"  {s}" for s in settings),
        ]
    elif params[0] or params[1]:
        lines += [
            f"Their jobs' settings before: {', '.join(params[0])}",
            f"  and now: {', '.join(params[1])}",
        ]
    measured_with = settings_measured_with(differences)
    if measured_with:
        lines.append(
            "To go on with this folder as it was measured, run with its settings: --config "
            + " ".join(measured_with)
        )
    lines += [
        "To measure with the new settings, write this run elsewhere: --config results_dir=<new folder> "
        "(e.g. results-quick). To rerun the same settings' points after a code or input change, or to "
        "replace these points on purpose, ask for it: --forcerun <rule> (the old files are moved to "
        f"{archive_root(device_results)}/<time>/, not deleted).",
    ]
    return "\n".join(lines)


def archive_root(device_results: Path) -> Path:
    """<results_dir>/replaced/<device>: outside the device's folder, so no table or comparison of the
    run reads what was set aside."""
    return device_results.parent / "replaced" / device_results.name


def set_aside(
    replacements: list[Replacement], device_results: Path, now: datetime | None = None
) -> Path | None:
    """Move the raw files of requested replacements to the archive, keeping their paths below the
    device's folder; the folder they went to, or None when there were none."""
    moving = [f for r in replacements if r.requested for f in r.files]
    if not moving:
        return None
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S.%fZ")
    target = archive_root(device_results) / stamp
    for path in moving:
        source = Path(path)
        try:
            relative = source.resolve().relative_to(device_results.resolve())
        except ValueError:
            relative = Path(source.name)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(source), destination)
    return target
