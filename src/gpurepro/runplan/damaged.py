"""Raw files a planned job would read that cannot be read: found before the first job starts.

Snakemake deletes a job's outputs before it runs the job, so a table step that fails on a damaged raw
file (emptied by a full disk, cut off by a kill, edited by hand) would leave the run without its last good
table. The run therefore reads its own plan first (onstart, rules/runplan.smk): every raw file and sidecar
that a planned job reads, and that no planned job writes anew, must parse; otherwise the run stops before
any job, naming each file, what is wrong with it and how to measure it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import results


def problems(paths: list[Path]) -> list[str]:
    """One line per raw file or sidecar among `paths` that cannot be read, saying why."""
    lines = []
    for path in paths:
        if not path.is_file() or not results.is_raw(path):
            continue
        if path.name.endswith(results.SIDECAR_SUFFIX):
            problem = _json_problem(path)
        elif path.suffix == ".csv":
            # the key columns are checked where the table step reads the file; here only what a parser sees
            problem = results.raw_problem(path, required=(), rows_required=False)
        else:
            continue
        if problem:
            lines.append(f"{path}: {problem}")
    return lines


def _json_problem(path: Path) -> str | None:
    try:
        json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        return f"not readable JSON ({err})"
    return None


def read_by_plan(dag: Any) -> list[Path]:
    """The files planned jobs read that no planned job writes (those are measured anew, not read)."""
    jobs = list(dag.needrun_jobs(exclude_finished=False))
    written = {str(f) for job in jobs for f in job.output}
    return sorted({Path(str(f)) for job in jobs for f in job.input if str(f) not in written})


def refusal(dag: Any) -> str | None:
    """The message that stops a run whose planned jobs would read damaged raw files, or None."""
    found = problems(read_by_plan(dag))
    if not found:
        return None
    first = Path(found[0].split(": ", 1)[0])
    return (
        f"gpurepro: {len(found)} raw file(s) that this run would read cannot be read, so no job was "
        "started and every table made from them is kept as it was:\n  "
        + "\n  ".join(found)
        + f"\n{results.how_to_go_on(first)}"
    )
