"""Archive extraction that refuses hostile entries instead of quietly rewriting them.

A downloaded or user-supplied archive may hold entries that write outside the folder it is extracted to:
an absolute path, a `..` component, or a link pointing out of the target (which a later entry then
writes through). Python's `zipfile` silently strips such names and `tarfile` follows them unless told
not to, so both would hide a tampered archive. Here every entry is checked first and any hostile one
stops the extraction with an `UnsafeArchiveError` naming the archive and the entry. Tar archives go
through the standard library's `data` filter (PEP 706), which also refuses device files and strips
set-uid bits; zip entries get the same path checks, and links in zips are refused outright (zipfile
cannot create them, and no dataset archive needs them).
"""

from __future__ import annotations

import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from tqdm import tqdm

from ..errors import GpureproError


class UnsafeArchiveError(GpureproError):
    """An archive entry would land outside the extraction target."""


def _require_tar_filters() -> None:
    if not hasattr(tarfile, "data_filter"):
        raise GpureproError(
            "safe tar extraction needs the tarfile extraction filters of Python 3.10.12, 3.11.4, "
            "3.12 or newer (PEP 706); upgrade Python"
        )


def check_member_name(archive: Path | str, name: str) -> PurePosixPath:
    """The entry's relative path, or an UnsafeArchiveError when it is absolute or climbs out with `..`."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (path.parts and path.parts[0].endswith(":")):
        raise UnsafeArchiveError(f"{archive}: refusing entry '{name}': it has an absolute path")
    if ".." in path.parts:
        raise UnsafeArchiveError(f"{archive}: refusing entry '{name}': it climbs out of the target with '..'")
    return path


def safe_tar_member(archive: Path | str, member: tarfile.TarInfo, target: Path) -> tarfile.TarInfo:
    """The member as the `data` filter lets it through, or an UnsafeArchiveError saying why not.

    The filter would quietly strip a leading '/' and extract the entry inside the target; an archive
    with absolute paths is refused instead, as it was not made for this use.
    """
    _require_tar_filters()
    check_member_name(archive, member.name)
    try:
        return tarfile.data_filter(member, str(target))
    except tarfile.FilterError as err:
        raise UnsafeArchiveError(f"{archive}: refusing entry '{member.name}': {err}") from None


def extract_tar_stream(archive: Path | str, fileobj: IO[bytes], target: Path) -> int:
    """Extract a tar read front to back from `fileobj` into `target`; the number of files written.

    Streaming (mode `r|`) lets a tar nested in another be extracted without first writing it to disk.
    """
    _require_tar_filters()
    target.mkdir(parents=True, exist_ok=True)
    files = 0
    try:
        with tarfile.open(fileobj=fileobj, mode="r|") as tar:
            for member in tar:
                checked = safe_tar_member(archive, member, target)
                tar.extract(checked, str(target), filter="fully_trusted")  # already filtered above
                files += checked.isfile()
    except tarfile.ReadError as err:
        raise GpureproError(f"{archive}: not a readable tar archive, or truncated ({err})") from None
    return files


def _zip_entries(archive: Path, zf: zipfile.ZipFile) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """Every entry with its checked relative path; raises on the first hostile one, before any writing."""
    checked = []
    for info in zf.infolist():
        if stat.S_ISLNK(info.external_attr >> 16):
            raise UnsafeArchiveError(
                f"{archive}: refusing entry '{info.filename}': it is a symbolic link (links are not "
                "extracted from zip archives)"
            )
        checked.append((info, check_member_name(archive, info.filename)))
    return checked


def extract_zip(archive: Path, target: Path, progress: bool = True) -> int:
    """Extract a zip into `target` after checking every entry; the number of files written."""
    target.mkdir(parents=True, exist_ok=True)
    files = 0
    try:
        with zipfile.ZipFile(archive) as zf:
            entries = _zip_entries(archive, zf)
            for info, relative in tqdm(
                entries, desc=f"extract {archive.name}", unit="file", disable=not progress
            ):
                destination = target.joinpath(*relative.parts)
                if info.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with zf.open(info) as src, destination.open("xb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                except FileExistsError:
                    raise UnsafeArchiveError(
                        f"{archive}: refusing entry '{info.filename}': a second entry with the same path"
                    ) from None
                files += 1
    except zipfile.BadZipFile as err:
        raise GpureproError(f"{archive}: not a readable zip archive, or truncated ({err})") from None
    return files


def zip_uncompressed_bytes(archive: Path) -> int:
    with zipfile.ZipFile(archive) as zf:
        return sum(info.file_size for info in zf.infolist())


def ensure_free_space(folder: Path, needed: int, what: str) -> None:
    """Fail before extracting rather than part-way, when the disk cannot hold the result."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise GpureproError(
            f"{what} needs about {needed / 1e9:.1f} GB in {folder}, which has {free / 1e9:.1f} GB free; "
            "free some space or point data_dir at a larger disk"
        )
