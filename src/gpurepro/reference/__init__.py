"""Reference rates of the GPU a run measures: what an absolute claim made on another GPU is scaled by.

The verdict scales a published figure from the paper's GPU to this one by the ratio of a rate that bounds
the claim's workload (config/hardware/README.md). This package measures this GPU's side of that ratio in
the run itself, with the same timing code as the SGEMM study, in a few seconds.
"""

from __future__ import annotations

# Each reference rate and its unit; config/hardware/<gpu>.yaml gives the paper GPU's side in the same unit.
REFERENCES: dict[str, str] = {
    "fp32_gemm": "TFLOP/s",
    "fp16_gemm": "TFLOP/s",
    "memory_bandwidth": "GB/s",
    "power_limit": "W",
}
