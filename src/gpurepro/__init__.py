"""gpurepro: a reproducibility pipeline for GPU performance and energy studies."""

__version__ = "0.1.0"
