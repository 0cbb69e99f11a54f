"""The noise workload: ResNet-50 training on the other GPUs of the node while one GPU is measured, as
the variability study ran NVIDIA's ResNet-50 beside its SGEMM runs.

`noise_during` starts `gpurepro train resnet50 --until-stopped` on the noise GPUs in a session of its
own, waits until it has warmed up (so the measurement sees training, not start-up), and on leaving the
block, normally or by an exception or Ctrl-C, stops it and everything it started (torchrun's workers
included) and waits for them: no process outlives the measurement. A noise workload that stops by
itself during the timed reps fails the measurement rather than label it "with noise".
"""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GpureproError
from ..harness import Workload
from .processes import background_process

WORKLOADS = ("none", "resnet50")
# Start-up on a GPU node: imports, torchrun's rendezvous, cuDNN's algorithm search in the warm-up.
READY_TIMEOUT_S = 600.0
# Time for torchrun to pass SIGTERM on and its workers to leave their current interval.
STOP_GRACE_S = 60.0


@dataclass(frozen=True)
class NoiseSettings:
    """The noise a measurement asks for (the --noise-* options of `gpurepro sgemm`)."""

    workload: str = "none"  # one of WORKLOADS; none: no noise
    gpus: str | None = None  # GPU indices for the noise, such as '1,2,3', or 'cpu'
    extra_args: str = ""  # further options of `gpurepro train resnet50`, as one shell-quoted string
    ready_timeout_s: float = READY_TIMEOUT_S  # longest wait for the noise to finish its warm-up
    profile: str | None = None  # the device profile the noise's training is checked against


@dataclass
class Noise:
    """The running noise workload (None: no noise); `describe` is its columns in the results."""

    process: subprocess.Popen | None = None
    describe: dict[str, Any] = field(default_factory=dict)

    def check_running(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise GpureproError(
                f"the noise workload stopped during the measurement (exit status {self.process.returncode}; "
                "its output is in this log): the reps did not run beside it"
            )

    def watch(self, prepare: Callable[[], Workload]) -> Callable[[], Workload]:
        """`prepare` whose workload checks, after its timed reps, that the noise ran all along."""
        if self.process is None:
            return prepare

        def prepared() -> Workload:
            workload = prepare()

            def timed_reps():  # -> pd.DataFrame
                reps = workload.timed_reps()
                self.check_running()
                return reps

            return dataclasses.replace(workload, timed_reps=timed_reps)

        return prepared


def noise_command(workload: str, gpus: str, ready_file: Path, extra: str, profile: str | None) -> list[str]:
    """`gpurepro train` started from its own module, so the noise imports none of the other subcommands."""
    command = [sys.executable, "-m", "gpurepro.commands.train", workload, "--gpus", gpus, "--until-stopped"]
    command += ["--ready-file", str(ready_file)]
    if profile:
        command += ["--profile", profile]
    return command + shlex.split(extra)


def _noise_gpus(value: str | None, measured: int | str) -> str:
    if not value:
        raise GpureproError("--noise-workload needs --noise-gpus: the GPUs to run it on (e.g. 1,2,3), or cpu")
    if value == "cpu":
        return value
    try:
        gpus = [int(part) for part in value.split(",")]
    except ValueError:
        raise GpureproError(f"--noise-gpus '{value}' is not 'cpu' or GPU indices such as 1,2,3") from None
    if measured in gpus:
        raise GpureproError(f"--noise-gpus {value} includes GPU {measured}, the one being measured")
    return ",".join(map(str, gpus))


def wait_until_ready(process: subprocess.Popen, ready_file: Path, timeout_s: float) -> float:
    """Seconds until the workload wrote `ready_file`; an error if it exits or times out first."""
    start = time.monotonic()
    while not ready_file.exists():
        if process.poll() is not None:
            raise GpureproError(
                f"the noise workload exited with status {process.returncode} before it started training; "
                "its output is in this log"
            )
        if time.monotonic() - start > timeout_s:
            raise GpureproError(f"the noise workload did not finish its warm-up within {timeout_s:g} s")
        time.sleep(0.2)
    return time.monotonic() - start


@contextlib.contextmanager
def noise_during(settings: NoiseSettings, measured: int | str) -> Iterator[Noise]:
    """The noise the settings ask for, running for the length of the block (or none)."""
    if settings.workload == "none":
        if settings.gpus:
            raise GpureproError("--noise-gpus needs --noise-workload resnet50")
        yield Noise()
        return
    gpus = _noise_gpus(settings.gpus, measured)
    with tempfile.TemporaryDirectory(prefix="gpurepro-noise-") as folder:
        ready = Path(folder) / "ready"
        command = noise_command(settings.workload, gpus, ready, settings.extra_args, settings.profile)
        # Its output goes to this job's stderr (the log); stdout stays this command's own.
        with background_process(command, STOP_GRACE_S, stdout=2, stderr=2) as process:
            print(f"noise: started pid {process.pid}: {shlex.join(command)}", file=sys.stderr, flush=True)
            waited = wait_until_ready(process, ready, settings.ready_timeout_s)
            print(
                f"noise: {settings.workload} training on {gpus}, warmed up after {waited:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            yield Noise(process, {"noise_workload": settings.workload, "noise_gpus": gpus})
        print(f"noise: stopped (pid {process.pid}, exit status {process.returncode})", file=sys.stderr)
