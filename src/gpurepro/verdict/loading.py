"""Claims as the verdict judges them: read and checked (claims.read_claims), then each scaling that asks
for it given the datasheet rule's calibration (pairs.shipped_calibration). Kept above both: the
calibration is fitted on the shipped claims' published pairs, read uncalibrated, so the reader of claim
files cannot itself ask for it without a circle."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..hardware import Gpu
from .claims import Claim, read_claims
from .pairs import shipped_calibration
from .points import PointKeys


def load_claims(
    paths: list[Path | str],
    schema: Path | str | None = None,
    hardware: dict[str, Gpu] | None = None,
    points: PointKeys | None = None,
    calibrated: bool = True,
) -> list[Claim]:
    """Every claim of the files (or folders of files) given, checked (claims.read_claims), with the
    calibrated datasheet rule where a scaling asks for it; `calibrated=False` leaves it unread."""
    claims = read_claims(paths, schema, hardware, points)
    return _calibrated(claims) if calibrated else claims


def _calibrated(claims: list[Claim]) -> list[Claim]:
    """Each scaling that asks for the calibrated datasheet rule given its exponent and uncertainty."""
    asking = [c for c in claims if c.scaling is not None and c.scaling.calibrated is not None]
    if not asking:
        return claims
    calibration = shipped_calibration()
    return [
        replace(
            claim,
            scaling=replace(
                claim.scaling, uncertainty=calibration.uncertainty, calibrated=calibration.exponent
            ),
        )
        if claim in asking and claim.scaling is not None
        else claim
        for claim in claims
    ]
