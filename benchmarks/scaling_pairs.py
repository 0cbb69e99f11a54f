"""The datasheet scaling rule against every figure it can be checked on (gpurepro.verdict.pairs): each
published pair (two absolute figures of one source and table row on two GPUs) and each shipped run
(config/hardware/calibration/datasheet_rule.yaml), with the ratio measured, the one the rule predicts,
its error, the GPU generations bridged and the calibrated rule's error with that check left out; then
the calibration: the exponent the datasheet ratio is taken to and its residual spread. No GPU needed.

    python benchmarks/scaling_pairs.py
"""

from __future__ import annotations

from gpurepro.verdict.pairs import shipped_calibration
from gpurepro.verdict.scaling import MAX_DATASHEET_GENERATIONS


def main() -> None:
    calibration = shipped_calibration()
    print(f"a datasheet scaling may bridge {MAX_DATASHEET_GENERATIONS} generation(s)")
    print(f"{len(calibration.pairs)} published pairs and {len(calibration.runs)} shipped runs:")
    for check in [*calibration.pairs, *calibration.runs]:
        left_out = calibration.left_out[check.unit]
        print(f"  {check.describe()}; left out, the calibrated rule errs {left_out:+.1%}")
    print(f"calibrated rule: {calibration.describe()}")


if __name__ == "__main__":
    main()
