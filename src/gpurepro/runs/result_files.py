"""Which tables and plots a run's rules make, and the same tables of the other profiles' results here:
what the verdict, the report and the combined tables collect, none of them named in the workflow."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path


def named_outputs(paths: Iterable[str], prefix: str, suffix: str) -> dict[str, str]:
    """Every `<prefix><name><suffix>` among `paths` (the outputs of the rules read so far), by name."""
    found = {}
    for path in paths:
        name = path[len(prefix) :]
        if path.startswith(prefix) and name.endswith(suffix) and "/" not in name:
            found[name[: -len(suffix)]] = path
    return dict(sorted(found.items()))


def other_device_tables(
    results_dir: str, profile_names: Collection[str], device: str, name: str = "*"
) -> list[str]:
    """tables/<name>.csv of every other profile's results folder under `results_dir` (copied from other
    machines, or from earlier runs of another profile)."""
    return sorted(
        str(path)
        for path in Path(results_dir).glob(f"*/tables/{name}.csv")
        if path.parent.parent.name in profile_names and path.parent.parent.name != device
    )
