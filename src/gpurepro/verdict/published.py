"""The claims a figure marks: one paper's claims file and the hardware table, through the verdict's own
loader, so that a figure draws the very numbers (computed, scaled) the verdict judges. Kept in the verdict
(not in plotting.py, which every figure and the comparison import) so that the verdict's modules are
loaded only by the figures that mark claims."""

from __future__ import annotations

from ..hardware import Gpu, load_hardware
from ..profiles import project_root
from .claims import Claim, load_claims


def study_claims(name: str) -> tuple[list[Claim], dict[str, Gpu]]:
    """The claims of config/expected/<name>.yaml and the hardware table."""
    hardware = load_hardware()
    path = project_root() / "config" / "expected" / f"{name}.yaml"
    return load_claims([path], hardware=hardware), hardware
