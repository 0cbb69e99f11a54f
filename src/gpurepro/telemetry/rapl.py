"""CPU package energy from Linux RAPL counters (/sys/class/powercap), where the kernel lets us read them.

The counters are microjoule registers that wrap at `max_energy_range_uj`; `RaplMeter` accumulates across
wraps as long as it is read more often than the wrap period (minutes at typical package power).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

POWERCAP_ROOT = Path("/sys/class/powercap")


@dataclass
class _Domain:
    path: Path
    max_range_uj: int
    last_uj: int
    total_uj: int = 0


def package_domains(root: Path = POWERCAP_ROOT) -> list[Path]:
    """Top-level package domains (intel-rapl:0, intel-rapl:1, ...), whose energy_uj is readable."""
    found = []
    for zone in sorted(root.glob("intel-rapl:*")):
        if zone.name.count(":") != 1:  # sub-zones (core, uncore, dram) are inside the package
            continue
        try:
            (zone / "energy_uj").read_text()
        except OSError:
            continue
        found.append(zone)
    return found


@dataclass
class RaplMeter:
    """Cumulative package energy in joules since construction, over all CPU packages."""

    root: Path = POWERCAP_ROOT
    _domains: list[_Domain] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        for zone in package_domains(self.root):
            max_range = int((zone / "max_energy_range_uj").read_text())
            self._domains.append(_Domain(zone, max_range, int((zone / "energy_uj").read_text())))

    @property
    def available(self) -> bool:
        return bool(self._domains)

    def why_unavailable(self) -> str:
        if self.root.is_dir():
            return f"no readable RAPL package counter under {self.root} (root access may be needed)"
        return f"{self.root} does not exist (no RAPL on this machine or kernel)"

    def joules(self) -> float:
        """Energy since construction; call at least once per wrap period."""
        for domain in self._domains:
            now = int((domain.path / "energy_uj").read_text())
            delta = now - domain.last_uj
            if delta < 0:  # the register wrapped
                delta += domain.max_range_uj
            domain.total_uj += delta
            domain.last_uj = now
        return sum(d.total_uj for d in self._domains) / 1e6
