"""The CUDA SGEMM binary (kernels/sgemm.cu: backends `cublas` and `tiled`) run as a measured workload.

The binary times each rep with CUDA events and reports host wall-clock bounds per rep, so the Python
sampler's telemetry lines up with its reps; it verifies every product before it writes its CSV.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from .. import nvml
from ..errors import GpureproError
from ..harness import Workload

KERNEL_BACKENDS = ("cublas", "tiled")


@dataclass(frozen=True)
class KernelSgemm:
    binary: Path
    impl: str
    n: int
    reps: int
    warmup: int
    gpu: int
    seed: int
    mode: str = "random"

    def command(self, out: Path, data_dir: Path) -> list[str]:
        """The binary's command line. `data_dir` is an empty folder, so the binary makes the operands on
        the GPU from mode and seed instead of loading stray host_A/B_<N>.bin files it might find."""
        return [
            str(self.binary), str(self.n), str(self.reps), str(self.gpu), "--impl", self.impl,
            "--warmup", str(self.warmup), "--seed", str(self.seed), "--mode", self.mode,
            "--data-dir", str(data_dir), "--out", str(out),
        ]  # fmt: skip

    def timed_reps(self) -> pd.DataFrame:
        return self.run(self.reps)

    def run(self, reps: int) -> pd.DataFrame:
        """Run the binary for `reps` reps; its per-rep CSV becomes the reps table. The binary verifies
        every product and exits 3 without a CSV when one is wrong, which fails the job."""
        if not self.binary.is_file():
            raise GpureproError(
                f"SGEMM binary {self.binary} does not exist; build it with `snakemake build_kernels`"
            )
        with tempfile.TemporaryDirectory(prefix="gpurepro-sgemm-") as tmp:
            out = Path(tmp) / "reps.csv"
            command = replace(self, reps=reps).command(out, Path(tmp))
            nvml.number_cuda_like_nvml()  # the binary inherits it
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise GpureproError(
                    f"{self.binary.name} {self.impl} N={self.n} on GPU {self.gpu} failed "
                    f"(exit {result.returncode}): {result.stderr.strip()[-1500:]}"
                )
            reps = pd.read_csv(out)
        print(result.stderr.strip(), file=sys.stderr)  # the binary's verification lines, into the job log
        return reps.drop(columns=["impl", "n", "gpu_index"])

    def workload(self) -> Workload:
        # No operation to repeat from Python: energy is read over the span of the binary's reps.
        return Workload(self.timed_reps, None, lambda: None, energy_reps=self.run)
