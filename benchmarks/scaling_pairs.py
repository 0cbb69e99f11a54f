"""The datasheet scaling rule against every published pair it can be checked on: two absolute figures
of one source and table row on two GPUs (gpurepro.verdict.pairs). Prints the ratio the source
published, the one the rule predicts, the error and the GPU generations bridged. No GPU needed.

    python benchmarks/scaling_pairs.py
"""

from __future__ import annotations

from gpurepro.hardware import load_hardware
from gpurepro.profiles import project_root
from gpurepro.verdict.claims import load_claims
from gpurepro.verdict.pairs import published_pairs
from gpurepro.verdict.scaling import MAX_DATASHEET_GENERATIONS


def main() -> None:
    hardware = load_hardware()
    claims = load_claims([project_root() / "config" / "expected"], hardware=hardware)
    checks = published_pairs(claims, hardware)
    allowed = MAX_DATASHEET_GENERATIONS
    print(f"{len(checks)} published pairs; a datasheet scaling may bridge {allowed} generation(s)")
    for check in checks:
        print(f"  {check.describe()}")


if __name__ == "__main__":
    main()
