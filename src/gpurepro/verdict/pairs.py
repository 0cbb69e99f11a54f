"""The datasheet scaling rule checked, and calibrated, on every figure it can be checked on.

Two kinds of check. A published pair: two absolute figures of one source, one table row apart only in
the GPU (NVIDIA's ResNet-50 images/s on an A100 80GB and a V100), give the ratio the source itself
measured between the two GPUs. A shipped run (config/hardware/calibration/datasheet_rule.yaml): a figure
a claim scales datasheet against datasheet, as one of this project's runs measured it on another GPU,
gives the ratio between the paper's GPU and that one. The rule (scaling.scale_factor) predicts each
ratio from the two datasheets; both kinds read it one way: NVIDIA's V100 -> A100 pairs 15.5% and 19.1%
over, the H200 runs 16-21% over what ResNet-50 reached.

So the rule is calibrated: a workload reaches its datasheet ratio r as r ** k (k < 1: a GPU's peaks
grow faster than what a real step reaches; k = 1 is the rule as it was), k fitted through the origin
in logs, one unit per published pair and one per claim and GPU model of the runs (several runs of one
GPU model check one ratio, not several). The residual spread left after k, as a 95% prediction
interval (Student's t over the units, widened for k's own error), is the scaling's uncertainty in place
of a guessed one; each unit's leave-one-out error says how well k predicts a ratio it was not fitted on.
The generations a check bridges are how far the rule has been checked (scaling.MAX_DATASHEET_GENERATIONS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from scipy import stats

from ..hardware import Gpu, load_hardware
from ..profiles import project_root
from ..schema import read_yaml
from .claims import ABSOLUTE, REPRODUCTION, Claim, Scaling, read_claims
from .ranges import expected_ends
from .scaling import NoReference, scale_factor

CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairCheck:
    """One published pair: the rule's predicted ratio of the newer GPU's figure over the older's against
    the ratio the source published."""

    older: Claim
    newer: Claim
    published: float
    predicted: float
    generations: int | None

    @property
    def error(self) -> float:
        """The rule's relative error: predicted / published - 1 (+0.15: 15% over)."""
        return self.predicted / self.published - 1

    @property
    def unit(self) -> str:
        return f"{self.older.id} -> {self.newer.id}"

    def describe(self) -> str:
        older, newer = self.older.gpus[0], self.newer.gpus[0]
        return (
            f"{older} -> {newer}: published {self.published:.3g}x, rule {self.predicted:.3g}x, "
            f"error {self.error:+.1%} over {self.generations} generation(s) "
            f"({self.older.id}, {self.newer.id})"
        )


@dataclass(frozen=True)
class RunCheck:
    """One shipped run: the figure a claim scales datasheet against datasheet, as the run measured it
    on another GPU, against the rule's prediction of it."""

    claim: Claim
    gpu: Gpu
    archive: str
    measured: float
    published: float  # the claim's figure on its paper's GPU
    predicted: float  # the rule's ratio from the paper's GPU to this one
    generations: int | None

    @property
    def observed(self) -> float:
        return self.measured / self.published

    @property
    def error(self) -> float:
        """predicted / measured ratio - 1 (+0.20: the rule 20% over what the run reached)."""
        return self.predicted / self.observed - 1

    @property
    def unit(self) -> str:
        return f"{self.claim.id} on {self.gpu.id}"

    def describe(self) -> str:
        return (
            f"{self.claim.gpus[0]} -> {self.gpu.id}: {Path(self.archive).name} measured {self.measured:,.0f} "
            f"({self.observed:.3g}x the published {self.published:,.0f}), rule {self.predicted:.3g}x, error "
            f"{self.error:+.1%} over {self.generations} generation(s) ({self.claim.id})"
        )


@dataclass(frozen=True)
class Calibration:
    """The rule calibrated (module docstring): a datasheet ratio r is reached as r ** exponent, within
    `uncertainty` (relative, the 95% prediction interval's half-width) of what was checked."""

    exponent: float
    uncertainty: float
    pairs: tuple[PairCheck, ...]
    runs: tuple[RunCheck, ...]
    # each unit's error of the calibrated rule fitted without that unit (a prediction it was not fitted on)
    left_out: dict[str, float]

    @property
    def units(self) -> int:
        return len(self.left_out)

    def describe(self) -> str:
        return (
            f"datasheet ratio to the power {self.exponent:.3f} (fitted on {len(self.pairs)} published pairs "
            f"and {len(self.runs)} shipped runs, {self.units} checks), ±{self.uncertainty:.1%} "
            f"({CONFIDENCE:.0%} prediction interval of its residuals)"
        )


def uncalibrated(scaling: Scaling) -> Scaling:
    """The rule as the datasheets give it, without a calibration's exponent."""
    return replace(scaling, calibrated=None)


def _key(claim: Claim) -> tuple[object, ...]:
    """What makes two claims one table row apart only in the GPU: source, table, metric, where, unit."""
    where = tuple(sorted((k, str(v)) for k, v in claim.measure.where.items()))
    return (
        claim.paper,
        claim.measure.table,
        claim.measure.metric,
        claim.measure.statistic,
        where,
        claim.unit,
    )


def _figure(claim: Claim) -> float | None:
    """The published figure: a value, or the lower bound a figure is held to (min alone)."""
    if claim.expected.value is not None:
        return claim.expected.value
    low, high = expected_ends(claim.expected)
    return low if math.isinf(high) and low > 0 else None


def _generations(older: Gpu, newer: Gpu) -> int | None:
    if older.generation is None or newer.generation is None:
        return None
    return newer.generation - older.generation


def _datasheet(claim: Claim) -> bool:
    return claim.purpose == REPRODUCTION and claim.kind == ABSOLUTE and claim.scaling is not None


def published_pairs(claims: list[Claim], hardware: dict[str, Gpu]) -> list[PairCheck]:
    """Every pair of absolute published figures of one source and row on two GPUs, each scaled by the
    rule datasheet against datasheet (uncalibrated) from the older GPU to the newer."""
    groups: dict[tuple[object, ...], list[Claim]] = {}
    for claim in claims:
        if _datasheet(claim):
            groups.setdefault(_key(claim), []).append(claim)
    checks = []
    for group in groups.values():
        ordered = sorted(group, key=lambda c: hardware[c.gpus[0]].generation or 0)
        for i, older in enumerate(ordered):
            for newer in ordered[i + 1 :]:
                old_gpu, new_gpu = hardware[older.gpus[0]], hardware[newer.gpus[0]]
                old_figure, new_figure = _figure(older), _figure(newer)
                if old_gpu.id == new_gpu.id or not old_figure or not new_figure:
                    continue
                try:
                    predicted = scale_factor(uncalibrated(older.scaling), old_gpu, {}, new_gpu).value  # type: ignore[arg-type]
                except NoReference:
                    continue
                generations = _generations(old_gpu, new_gpu)
                checks.append(PairCheck(older, newer, new_figure / old_figure, predicted, generations))
    return checks


def default_runs() -> Path:
    return project_root() / "config" / "hardware" / "calibration" / "datasheet_rule.yaml"


def shipped_runs(claims: list[Claim], hardware: dict[str, Gpu], path: Path | None = None) -> list[RunCheck]:
    """The shipped runs of the calibration file, each against the rule's prediction of its figure."""
    by_id = {claim.id: claim for claim in claims}
    checks = []
    for run in read_yaml(path or default_runs(), "scaling calibration").get("runs", []):
        claim, gpu = by_id[run["claim"]], hardware[run["gpu"]]
        paper = hardware[claim.gpus[0]]
        published = _figure(claim)
        assert claim.scaling is not None and published, f"{claim.id} states no figure the rule scales"
        predicted = scale_factor(uncalibrated(claim.scaling), paper, {}, gpu).value
        checks.append(
            RunCheck(
                claim,
                gpu,
                run["archive"],
                float(run["measured"]),
                published,
                predicted,
                _generations(paper, gpu),
            )
        )
    return checks


def _units(pairs: list[PairCheck], runs: list[RunCheck]) -> dict[str, tuple[float, float]]:
    """Each unit's (log rule ratio, log observed ratio): a pair alone; the runs of one claim and GPU
    model averaged, as one check of one ratio."""
    logs: dict[str, list[tuple[float, float]]] = {}
    for pair in pairs:
        logs.setdefault(pair.unit, []).append((math.log(pair.predicted), math.log(pair.published)))
    for run in runs:
        logs.setdefault(run.unit, []).append((math.log(run.predicted), math.log(run.observed)))
    return {
        unit: (sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points))
        for unit, points in logs.items()
    }


def _exponent(units: list[tuple[float, float]]) -> float:
    """Least squares through the origin of log observed on log rule ratio."""
    return sum(x * y for x, y in units) / sum(x * x for x, _ in units)


def calibrate(pairs: list[PairCheck], runs: list[RunCheck]) -> Calibration:
    """The exponent, its prediction interval and each unit's leave-one-out error (module docstring)."""
    units = _units(pairs, runs)
    points = list(units.values())
    if len(points) < 2:
        raise ValueError(f"a calibration needs at least two checks, not {len(points)}")
    k = _exponent(points)
    residuals = [y - k * x for x, y in points]
    spread = math.sqrt(sum(r * r for r in residuals) / (len(points) - 1))
    t = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(points) - 1))
    half = t * spread * math.sqrt(1 + 1 / len(points))
    left_out = {}
    for unit, (x, y) in units.items():
        others = [point for name, point in units.items() if name != unit]
        left_out[unit] = math.exp(_exponent(others) * x - y) - 1
    return Calibration(k, math.exp(half) - 1, tuple(pairs), tuple(runs), left_out)


@cache
def shipped_calibration() -> Calibration:
    """The rule calibrated on the shipped claims' published pairs and the shipped runs."""
    hardware = load_hardware()
    claims = read_claims([project_root() / "config" / "expected"], hardware=hardware)
    return calibrate(published_pairs(claims, hardware), shipped_runs(claims, hardware))
