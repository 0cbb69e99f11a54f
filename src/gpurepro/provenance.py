"""Provenance: what a number was measured on and with, written beside every raw result file.

Captured at the start of a job (the GPU's clocks, power limit and temperature then) and completed at its
end, so a reviewer can tell a throttled or mis-configured GPU from a slow one.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from . import __version__, host, nvml
from .forkserver import protocol
from .profiles import project_root


def config_hash(config: dict[str, Any]) -> str:
    """A short stable hash of a configuration (key order does not matter)."""
    canonical = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def config_file(results: Path, digest: str) -> Path:
    """Where a run keeps the config whose config_hash is `digest` (results: one device's folder)."""
    return results / "config" / f"{digest}.yaml"


def flat_config(tree: Any, prefix: str = "") -> dict[str, str]:
    """A config's leaves by dotted key, each as JSON (lists are leaves): what two configs differ in."""
    if not isinstance(tree, dict):
        return {prefix: json.dumps(tree, default=str)}
    out: dict[str, str] = {}
    for key, value in tree.items():
        out.update(flat_config(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def recorded_config_values(results: Path, digests: Iterable[str]) -> dict[str, set[str]]:
    """Each config key's values (flat_config) over the configs a run kept for these config hashes
    (config/<hash>.yaml in `results`, one device's folder); a hash whose file is gone adds nothing."""
    values: dict[str, set[str]] = {}
    for digest in sorted(set(digests)):
        path = config_file(results, digest)
        if path.is_file():
            for key, value in flat_config(yaml.safe_load(path.read_text()) or {}).items():
                values.setdefault(key, set()).add(value)
    return values


def record_config(config: dict[str, Any], results: Path, digest: str | None = None) -> Path:
    """The run's resolved config, written once per distinct config (a rerun with other settings adds
    its own file, none is overwritten): sidecars name it by their config_hash (`digest`: the hash the
    run handed its jobs, computed when the config was read; by default, the config's own)."""
    path = config_file(results, digest or config_hash(config))
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        plain = json.loads(json.dumps(config, default=str))  # as config_hash reads it
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as draft:
            yaml.safe_dump(plain, draft, sort_keys=True)
        os.replace(draft.name, path)
    return path


# Written by git into a source archive (.gitattributes export-subst); a checkout keeps the placeholder.
ARCHIVE_COMMIT = Path("src") / "gpurepro" / "source_commit.txt"


def git_state(root: Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the checkout; outside one, the commit a source archive was made from
    (whether its files changed since is unknown); else the reason they are unknown."""
    root = root or project_root()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=20
        ).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}
    except (OSError, subprocess.SubprocessError) as err:
        archived = _archived_commit(root)
        if archived:
            return {
                "commit": archived,
                "dirty": None,
                "note": "not a git checkout: the commit its source archive was made from (git archive); "
                "whether files changed after unpacking is unknown",
            }
        return {"commit": None, "dirty": None, "note": f"not a git checkout or git missing ({err})"}


def _archived_commit(root: Path) -> str | None:
    """The commit git wrote into a source archive's ARCHIVE_COMMIT, or None (a checkout's placeholder,
    no such file)."""
    try:
        text = (root / ARCHIVE_COMMIT).read_text().strip()
    except OSError:
        return None
    return text if re.fullmatch(r"[0-9a-f]{40}", text) else None


def container_state() -> dict[str, Any]:
    """The container engine and image this job ran in; 'none' means directly on the host.

    `gpurepro container exec` and the workflow set GPUREPRO_CONTAINER_ENGINE and GPUREPRO_IMAGE_ID; a job
    started in Apptainer some other way is still recognised by the variable Apptainer sets inside.
    """
    apptainer_image = os.environ.get("APPTAINER_CONTAINER") or os.environ.get("SINGULARITY_CONTAINER")
    default_engine = "apptainer" if apptainer_image else "none"
    return {
        "engine": os.environ.get("GPUREPRO_CONTAINER_ENGINE", default_engine),
        "image_id": os.environ.get("GPUREPRO_IMAGE_ID", apptainer_image),
    }


def software_versions() -> dict[str, Any]:
    versions: dict[str, Any] = {"python": sys.version.split()[0], "gpurepro": __version__}
    try:
        import torch

        versions["torch"] = torch.__version__
        versions["torch_cuda"] = torch.version.cuda
        versions["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except ImportError:
        versions["torch"] = None
    return versions


def launch() -> str:
    """How this process started: forked from the run's fork server (libraries imported before the fork)
    or as an interpreter of its own. Neither touches the GPU before the job does."""
    server = os.environ.get(protocol.FORKED_VAR)
    return f"forked from fork server {server}" if server else "own interpreter"


# Set by a node job's per-GPU process (commands/campaign_worker.py): JSON of when each of the node's
# processes left its barrier (start_times, by device), this one's (start_time) and their skew.
NODE_JOB_VAR = "GPUREPRO_NODE_JOB"


def node_job() -> dict[str, Any] | None:
    """The node job this process measures in, with every GPU's start: how far apart they began."""
    value = os.environ.get(NODE_JOB_VAR)
    return json.loads(value) if value else None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def begin(
    gpu_indices: list[int], profile: str, config_digest: str, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Everything known at the start of a measurement."""
    gpus: list[dict[str, Any]] = []
    if gpu_indices:
        with nvml.session():
            gpus = [nvml.gpu_info(i).as_dict() for i in gpu_indices]
    return {
        "profile": profile,
        "gpus": gpus,
        "host": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "cpu": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
        },
        # the CPU side of this process: model, governor, the CPUs it runs on, torch's threads, pinning
        "host_cpu": host.describe_host([gpu.get("pci_bus_id") for gpu in gpus]),
        "software": software_versions(),
        "git": git_state(),
        "config_hash": config_digest,
        "container": container_state(),
        "command": sys.argv,
        "launch": launch(),
        # a node job's process: when each of the node's processes began (absent for a job on its own)
        **({"node_job": node} if (node := node_job()) else {}),
        "start_time": now_iso(),
        **(extra or {}),
    }


def gpu_name(record: dict[str, Any]) -> str:
    """NVML's name of the (first) GPU a record was measured on; 'cpu' for a CPU run."""
    return str((record.get("gpus") or [{}])[0].get("name", "cpu"))


def finish(started: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Complete a provenance record at the end of a measurement."""
    return {**started, "end_time": now_iso(), **(extra or {})}
