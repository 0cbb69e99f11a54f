"""What `gpurepro container detect` reports: whether a Docker engine answers (and has the NVIDIA
runtime), where Apptainer is, and which engine `container.engine=auto` picks for a GPU profile and for
the cpu profile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .engine import DockerProbe, apptainer_binary, probe_docker, resolve_engine


@dataclass(frozen=True)
class EngineReport:
    docker: DockerProbe
    apptainer: str | None
    auto: dict[str, str]  # the engine auto picks, for "gpu" and "cpu" profiles

    def as_dict(self) -> dict[str, Any]:
        return {"docker": self.docker.as_dict(), "apptainer": self.apptainer, "auto": self.auto}

    def lines(self) -> list[str]:
        """The report in words, a line per engine and one for auto's choice."""
        probe = self.docker
        if probe.answers:
            runtime = "has the NVIDIA runtime" if probe.nvidia_runtime else "has no NVIDIA runtime"
            docker = (
                f"Docker: engine {probe.version} answers; {runtime} (runtimes: {', '.join(probe.runtimes)})"
            )
        else:
            docker = f"Docker: {probe.reason}"
        return [
            docker,
            f"Apptainer: {self.apptainer or 'not found on PATH'}",
            f"container.engine=auto picks: {self.auto['gpu']} for a GPU profile, {self.auto['cpu']} for the "
            "cpu profile",
        ]


def detect_engines() -> EngineReport:
    """Ask the engines here once and resolve `auto` for both kinds of profile from that answer."""
    probe = probe_docker()
    apptainer = apptainer_binary()
    picks = {
        kind: resolve_engine("auto", gpu_jobs=kind == "gpu", cluster=False, sdm_apptainer=False, probe=probe)
        for kind in ("gpu", "cpu")
    }
    return EngineReport(probe, apptainer, picks)
