"""A run packed into one archive (`gpurepro pack`): its tables, raw files with their provenance sidecars
and telemetry, its verdict and, for a placed run, where each claim group ran (placement.json); a
`<archive>.sha256` beside it (sha256sum's format). `gpurepro compare` takes such an archive for A or B:
the checksum is verified, then it is unpacked to a temporary folder.

An archive is a record sent to others: pack never replaces one (nor its checksum), and writes each
atomically, so a failed pack leaves no half archive under the name. A file that matches its checksum but
is no gzip'd tar (it was written so, not damaged on the way) is refused naming it, as a damaged one is."""

from __future__ import annotations

import gzip
import hashlib
import tarfile
import zlib
from pathlib import Path

from ..errors import GpureproError, ResultExistsError
from ..results import write_derived, write_derived_with

SUFFIX = ".tar.gz"
# What a comparison or a reviewer needs from a run; logs, plots and benchmarks are left out (remade).
PACKED = ("tables/*.csv", "*/raw/**/*", "verdict*", "config/*.yaml", "placement.json")


def checksum_path(archive: Path) -> Path:
    return archive.with_name(f"{archive.name}.sha256")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pack(results: Path, archive: Path) -> list[Path]:
    """Write `archive` (members under the run's folder name) and its checksum; the files packed."""
    if not (results / "tables").is_dir():
        raise GpureproError(f"{results}: not a results folder of one device (no tables/), e.g. results/h100")
    if not archive.name.endswith(SUFFIX):
        raise GpureproError(f"--out {archive}: the archive's name must end in {SUFFIX}")
    for existing in (archive, checksum_path(archive)):
        if existing.exists():
            raise ResultExistsError(
                f"--out {archive}: {existing} already exists; pack never replaces an archive or its "
                "checksum. Name another file, or move the old one away first"
            )
    files = sorted({path for pattern in PACKED for path in results.glob(pattern) if path.is_file()})
    top = Path(results.resolve().name)

    def fill(tmp: Path) -> None:
        with tarfile.open(tmp, "w:gz") as tar:
            for path in files:
                tar.add(path, arcname=str(top / path.relative_to(results)))

    write_derived_with(archive, fill, "--out")
    write_derived(checksum_path(archive), f"{sha256(archive)}  {archive.name}\n", "--out")
    return files


def verify(archive: Path) -> None:
    """Stop where `archive` does not match the .sha256 beside it, or has none."""
    sums = checksum_path(archive)
    if not sums.is_file():
        raise GpureproError(f"{archive}: no checksum {sums} beside it (gpurepro pack writes one)")
    expected = sums.read_text().split()[0] if sums.read_text().split() else ""
    actual = sha256(archive)
    if actual != expected:
        raise GpureproError(
            f"{archive}: checksum {actual} does not match {sums} ({expected}): damaged or altered"
        )


def unpack(archive: Path, into: Path) -> Path:
    """Verify `archive` against its .sha256 and extract it into `into`; the run folder it holds."""
    verify(archive)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tops = {Path(name).parts[0] for name in tar.getnames()}
            if len(tops) != 1:
                raise GpureproError(f"{archive}: expected one run folder at the top, found {sorted(tops)}")
            tar.extractall(into, filter="data")  # no absolute paths, links out or devices
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise GpureproError(
            f"{archive}: not an archive gpurepro pack writes (a gzip-compressed tar of one run folder): "
            f"{err}. Its checksum matches, so it was written so rather than damaged on the way; pack the "
            f"run again (gpurepro pack RESULTS --out NAME{SUFFIX})"
        ) from err
    return into / tops.pop()


def is_archive(path: Path | str) -> bool:
    return str(path).endswith(SUFFIX) and Path(path).is_file()
