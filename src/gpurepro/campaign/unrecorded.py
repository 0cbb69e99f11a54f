"""Tries at a node that ended without their record, recorded afterwards with what is known of their end.

A node job records its own failures and the signals it can catch (node.py, signals.py); what it cannot
catch (SIGKILL: SLURM's last step after a time limit, the out-of-memory killer; its node going down)
leaves an attempt folder with the job's note of how it started (job.json) and no record. The next
`gpurepro campaign tables` records each such try, once its job has certainly ended:
- through SLURM (the job's note names its SLURM job): sacct's state, exit code and elapsed time against
  the time limit, e.g. "SLURM job 4242: TIMEOUT (exit code 0:15) after 00:16:02 of 00:16:00"; a job
  sacct still shows pending or running is left alone;
- without SLURM, on the host it ran on: that its process is gone without a record;
- elsewhere (another host, no sacct) it cannot be told and stays without a record, as a try that never
  started does; the next run measures the node again either way.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

from . import layout

SACCT_TIMEOUT_S = 60
# sacct's states of a job that has not ended (any other state is final)
ACTIVE = ("PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED", "CONFIGURING", "COMPLETING",
          "STAGE_OUT", "SIGNALING", "REQUEUE_HOLD", "REQUEUE_FED", "PREEMPTED")  # fmt: skip
SACCT_FIELDS = "JobID,State,ExitCode,Elapsed,Timelimit"


def sacct(job_id: str) -> dict[str, str] | None:
    """sacct's record of a SLURM job (its allocation, not its steps); None where sacct is not here or
    knows no such job."""
    if shutil.which("sacct") is None:
        return None
    found = subprocess.run(
        ["sacct", "--jobs", job_id, "--allocations", "--noheader", "--parsable2", f"--format={SACCT_FIELDS}"],
        capture_output=True, text=True, timeout=SACCT_TIMEOUT_S,
    )  # fmt: skip
    for line in found.stdout.splitlines():
        fields = dict(zip(SACCT_FIELDS.split(","), line.split("|"), strict=False))
        if fields.get("JobID") == job_id:
            return fields
    return None


def _process_alive(job: dict[str, Any]) -> bool:
    """Whether the job's process still runs on this host (a later process given its pid does not count)."""
    try:
        return psutil.Process(int(job["pid"])).create_time() <= float(job["started"]) + 1
    except (psutil.NoSuchProcess, psutil.AccessDenied, KeyError, TypeError, ValueError):
        return False


def why_ended(folder: Path) -> str | None:
    """How a try without a record ended, in words; None while it may still run, or where it cannot be told."""
    job = layout.read_record(folder, layout.JOB_RECORD)
    if job is None:
        return None
    started = datetime.fromtimestamp(float(job["started"]), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    ran = f"the node job (pid {job.get('pid')} on {job.get('hostname')}, started {started})"
    ran += " ended before recording"
    slurm_job = job.get("slurm_job_id")
    if slurm_job:
        found = sacct(str(slurm_job))
        if found is None or found.get("State", "").split(" ")[0] in ACTIVE:
            return None
        return (
            f"{ran}: SLURM job {slurm_job} {found.get('State')} (exit code {found.get('ExitCode')}) after "
            f"{found.get('Elapsed')} of {found.get('Timelimit')}"
        )
    if job.get("hostname") != socket.gethostname() or _process_alive(job):
        return None
    return (
        f"{ran}: its process is gone, killed by a signal it cannot catch (SIGKILL: the out-of-memory "
        "killer, or a time limit's last step) or its host restarted; see its log"
    )


def record(raw: Path | str, nodes: list[str] | None = None) -> list[layout.Attempt]:
    """Record every try of these nodes (default: every node folder) that ended without a record (status
    failed, with how it ended); the tries recorded."""
    recorded = []
    for node in layout.nodes_of(raw, nodes):
        for attempt in layout.attempts(raw, node):
            if attempt.record is not None:
                continue
            why = why_ended(attempt.folder)
            if why is None:
                continue
            job = layout.read_record(attempt.folder, layout.JOB_RECORD) or {}
            entry = {"status": "failed", "reason": why, "hostname": job.get("hostname", node), "gpus": [],
                     "recorded": time.time(), "recorded_after_the_job": True}  # fmt: skip
            layout.write_record(attempt.folder, entry)
            recorded.append(layout.Attempt(node, attempt.number, attempt.folder, entry))
    return recorded
