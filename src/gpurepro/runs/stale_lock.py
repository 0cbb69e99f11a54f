"""A run killed outright (SIGKILL, a closed SSH session, a power loss) leaves Snakemake's lock in
.snakemake/locks and marks the outputs of the jobs it was running as incomplete. The next run then stops
on "Directory cannot be locked" or on the incomplete files, one at a time. This says both at once: what
happened and the two commands that go on, once no snakemake process runs in the folder any more.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from pathlib import Path

import psutil

TROUBLESHOOTING = "docs/troubleshooting.md"


def is_snakemake(cmdline: Sequence[str]) -> bool:
    """A Snakemake command line: its script (`snakemake ...`) or module (`python -m snakemake ...`)."""
    return any(Path(arg).name == "snakemake" for arg in cmdline[:3])


def snakemake_runs_in(folder: Path) -> bool:
    """Whether a snakemake process other than this one (and those that started it) works in `folder`
    on this host."""
    me = psutil.Process()
    own = {me.pid, *(parent.pid for parent in me.parents())}
    folder = folder.resolve()
    for process in psutil.process_iter(["pid", "cmdline"]):
        if process.info["pid"] in own or not is_snakemake(process.info["cmdline"] or []):
            continue
        try:
            if Path(process.cwd()).resolve() == folder:
                return True
        except (psutil.Error, OSError):
            continue
    return False


def incomplete_outputs(folder: Path) -> list[str]:
    """The outputs Snakemake marked as being written (.snakemake/incomplete holds one file per output,
    named by its path in URL-safe base64)."""
    names = []
    for marker in sorted((folder / ".snakemake" / "incomplete").glob("*")):
        try:
            names.append(base64.urlsafe_b64decode(marker.name).decode())
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
    return names


def stale_lock_message(folder: Path) -> str | None:
    """The line that says a killed run's lock is left in `folder`, and what to type; None when there is
    no lock, or a snakemake still runs there (its lock is no stale one)."""
    if not any((folder / ".snakemake" / "locks").glob("*.lock")) or snakemake_runs_in(folder):
        return None
    unfinished = incomplete_outputs(folder)
    left = (
        f"; {len(unfinished)} outputs it was writing are marked incomplete (e.g. {unfinished[0]})"
        if unfinished
        else ""
    )
    return (
        "gpurepro: an earlier run in this folder was killed before it finished (SIGKILL, a closed SSH "
        f"session, a power loss): its lock is left in .snakemake/locks and no snakemake runs here now{left}. "
        "Type snakemake --unlock, then your command again with --rerun-incomplete, which redoes the jobs it "
        f"left unfinished and keeps those it finished ({TROUBLESHOOTING})."
    )
