"""The figures the guide quotes from the workflow's own plan: how many jobs a dry-run plans for a named
run and the estimate it prints (docs/runtime.md, "The estimate a run prints"), so that the README and
docs/ say what the code computes. tests/test_docs_figures.py compares the pages with them; to see them:

    python -m gpurepro.runplan.docs_figures            # every plan the guide quotes
    python -m gpurepro.runplan.docs_figures quick_h100 # one

Each plan is a `snakemake -n` in a copy of the workflow (the checkout by default) with no results: there
are no earlier benchmark files to go by, so every job's seconds come from its study's model, and nothing
is written into the checkout. The plans are the guide's:
planned on a machine whose NVML sees no GPU (the GPU list is the one given, the cool-down waits the
models' means), with the CUDA toolkit on the PATH (the cublas and tiled SGEMM kernels are planned, as
on the documented GPU hosts) and on the host, not in a container.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import nvml


@dataclass(frozen=True)
class Plan:
    """A run the guide quotes: what it is, in words, and the `snakemake` arguments that plan it."""

    what: str
    args: tuple[str, ...]
    config: tuple[str, ...] = ()


PLANS: Mapping[str, Plan] = {
    "quick_h100": Plan("the quick plan on one H100", ("--cores", "16"), ("device=h100", "quick=true")),
    "full_h100": Plan("the full plan on one H100", ("--cores", "16"), ("device=h100",)),
    "full_h100_x4": Plan(
        "the full plan on four H100s, placed by claim group",
        ("--cores", "16"),
        ("device=h100", "gpus=[0,1,2,3]"),
    ),
    "full_h100_x8": Plan(
        "the full plan on eight H100s, placed by claim group",
        ("--cores", "16"),
        ("device=h100", "gpus=[0,1,2,3,4,5,6,7]"),
    ),
    "cpu": Plan("the default run on the cpu profile", ("--cores", "4"), ("device=cpu",)),
    "quick_cpu": Plan("the quick run on the cpu profile", ("--cores", "4"), ("device=cpu", "quick=true")),
    "quick_h100_slurm": Plan(
        "the quick H100 plan on SLURM (profiles/slurm)",
        ("--profile", "profiles/slurm"),
        ("device=h100", "quick=true"),
    ),
    "full_h100_slurm": Plan(
        "the full H100 plan on SLURM (profiles/slurm)", ("--profile", "profiles/slurm"), ("device=h100",)
    ),
}
# The plans that need snakemake-executor-plugin-slurm (the project's `slurm` and `test` extras)
SLURM_PLANS = frozenset(name for name, plan in PLANS.items() if "profiles/slurm" in plan.args)


@dataclass(frozen=True)
class Figures:
    """What one dry-run printed: the lines of its estimate, and the figures in them."""

    lines: tuple[str, ...]  # the estimate's lines, each starting "gpurepro: "
    jobs: int
    wall: str  # "11 min 05 s", "9 h 53 min", as printed
    # study -> (measuring jobs, their time as printed)
    studies: Mapping[str, tuple[int, str]]
    # rule -> jobs, from Snakemake's job stats
    rules: Mapping[str, int]
    worst: str | None = None  # the wall time with the worst case of more processes (a quick run)
    extra: int | None = None  # the more processes of that worst case
    gpus_each: str | None = None  # "2 h 36 min to 2 h 38 min": each GPU's jobs, where placed
    every_core: str | None = None  # the jobs that take every core, in all, where placed
    cooldown: str | None = None  # the cool-down waits, in all

    def as_text(self) -> Mapping[str, str]:
        """The figures as the guide writes them, by name: jobs ("1,015"), wall, worst, extra, gpus_each,
        every_core, cooldown, <study>_jobs and <study>_time, rule_<rule>."""
        named: dict[str, str] = {"jobs": f"{self.jobs:,}", "wall": self.wall}
        optional = {
            "worst": self.worst,
            "extra": None if self.extra is None else str(self.extra),
            "gpus_each": self.gpus_each,
            "every_core": self.every_core,
            "cooldown": self.cooldown,
        }
        named.update({key: value for key, value in optional.items() if value is not None})
        for study, (count, time) in self.studies.items():
            named[f"{study}_jobs"], named[f"{study}_time"] = f"{count:,}", time
        named.update({f"rule_{rule}": f"{count:,}" for rule, count in self.rules.items()})
        return named


DURATION = r"(?:\d+ h \d+ min|\d+ min \d+ s|\d+ s)"
PLANNED = re.compile(rf"^gpurepro: (\d+) jobs? planned, about ({DURATION}) ")
STUDY = re.compile(rf"(\w+) (\d+) jobs? ({DURATION})")
WORST = re.compile(rf"at worst (\d+) more process(?:es)? .*: about ({DURATION}) in all")
SIDE_BY_SIDE = re.compile(rf"side by side, ({DURATION} to {DURATION}) of jobs each")
EVERY_CORE = re.compile(rf"nothing beside them, ({DURATION}) in all")
COOLDOWN = re.compile(rf"about ({DURATION}) of cool-down waits")
RULE_COUNT = re.compile(r"^(\w+)\s+(\d+)$")


@dataclass
class _Found:
    lines: list[str] = field(default_factory=list)
    rules: dict[str, int] = field(default_factory=dict)


def parse(output: str) -> Figures:
    """The figures of a dry-run's output (stdout and stderr together)."""
    found = _Found()
    in_stats = False
    for line in output.splitlines():
        if line.startswith("Job stats:"):
            in_stats = not found.rules  # the first table: the plan's jobs by rule
        elif in_stats and (match := RULE_COUNT.match(line.strip())):
            if match[1] == "total":
                in_stats = False
            else:
                found.rules[match[1]] = int(match[2])
        elif line.startswith("gpurepro: ") and not line.startswith("gpurepro: ddp:"):
            found.lines.append(line)
    estimate = [i for i, line in enumerate(found.lines) if PLANNED.match(line)]
    if not estimate:
        raise ValueError(f"no estimate in the dry-run's output: {output[-2000:]}")
    lines = tuple(found.lines[estimate[-1] :])
    head = PLANNED.match(lines[0])
    assert head is not None
    text = "\n".join(lines)
    measured = next((line for line in lines if line.startswith("gpurepro: measurements: ")), "")
    studies = {
        name: (int(count), time)
        for name, count, time in STUDY.findall(measured.split(" (about ")[0].removeprefix("gpurepro: "))
    }
    worst = WORST.search(text)
    side = SIDE_BY_SIDE.search(text)
    every_core = EVERY_CORE.search(text)
    cooldown = COOLDOWN.search(measured)
    return Figures(
        lines=lines,
        jobs=int(head[1]),
        wall=head[2],
        studies=studies,
        rules=found.rules,
        worst=worst[2] if worst else None,
        extra=int(worst[1]) if worst else None,
        gpus_each=side[1] if side else None,
        every_core=every_core[1] if every_core else None,
        cooldown=cooldown[1] if cooldown else None,
    )


def planning_env(folder: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`env` for the guide's plans, with stand-ins in `folder`: an `nvcc` first on the PATH (planning only
    asks whether it is there; a dry-run builds nothing), so the kernels' SGEMM points are planned as on a
    host with the CUDA toolkit; and DOCKER_HOST at a socket nobody listens on, so `container.engine: auto`
    picks the host, as where no Docker engine with the NVIDIA runtime answers."""
    nvcc = folder / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'a stand-in for planning only' >&2\nexit 1\n")
    nvcc.chmod(0o755)
    return {
        **env,
        "PATH": f"{folder}{os.pathsep}{env.get('PATH', '')}",
        "DOCKER_HOST": f"unix://{folder / 'no-docker.sock'}",
    }


def dry_run(workflow: Path, plan: Plan) -> str:
    """The output of `snakemake -n` for `plan` in `workflow`: a copy of the workflow with no results
    (copy_workflow), so that no earlier benchmark file stands in for a model."""
    with tempfile.TemporaryDirectory(prefix="gpurepro-plan-") as scratch:
        args = (*plan.args, "--config", *plan.config) if plan.config else plan.args
        result = subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", *args],
            cwd=workflow,
            capture_output=True,
            text=True,
            timeout=900,
            env=planning_env(Path(scratch), os.environ),
        )
    if result.returncode != 0:
        raise RuntimeError(f"snakemake -n {' '.join(args)} failed: {result.stderr[-3000:]}")
    return result.stdout + result.stderr


def figures(workflow: Path, name: str) -> Figures:
    """The figures of the guide's plan `name` (PLANS), planned in `workflow` (a copy: dry_run)."""
    return parse(dry_run(workflow, PLANS[name]))


# What the workflow reads when it plans: the rest of a checkout (results, data, build outputs,
# Snakemake's records) would change the plan
WORKFLOW_FILES = (
    "Snakefile", "workflow", "config", "profiles", "src", "kernels", "containers", "pyproject.toml",
    "README.md", ".dockerignore",
)  # fmt: skip


def copy_workflow(root: Path, folder: Path) -> Path:
    """The files of the workflow at `root` that planning reads, copied into `folder`."""
    for item in WORKFLOW_FILES:
        source = root / item
        if source.is_dir():
            shutil.copytree(source, folder / item, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, folder / item)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plans", nargs="*", help=f"the plans (default: all): {', '.join(PLANS)}")
    parser.add_argument(
        "--workflow", type=Path, default=Path.cwd(), help="the checkout to plan (a copy of it)"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.plans) - set(PLANS))
    if unknown:
        parser.error(f"no such plan: {', '.join(unknown)}; the plans: {', '.join(PLANS)}")
    if nvml.available()[0]:
        print(
            "gpurepro: NVML sees GPUs here: the plans follow them and their temperature, not the guide's",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory(prefix="gpurepro-workflow-") as copy:
        workflow = copy_workflow(args.workflow, Path(copy))
        found = {name: figures(workflow, name) for name in args.plans or PLANS}
    for name, figures_of in found.items():
        print(f"{name}: {PLANS[name].what}")
        for key, value in figures_of.as_text().items():
            print(f"  {key}: {value}")
        for line in figures_of.lines:
            print(f"  | {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
