"""Downloading one archive with pooch: checksum-verified, from an address or its mirrors, with progress.

pooch streams the file to a temporary name beside the destination and moves it into place only once
its checksum matches, so an interrupted or corrupted download leaves nothing behind that looks finished,
and a file already there with the right checksum is reused without touching the network. A dropped
connection restarts the download from the start (pooch retries `attempts - 1` times), then the next
mirror is tried.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

import pooch
import requests
from tqdm import tqdm

from ..errors import GpureproError

_CHECKSUM = re.compile(r"^(md5|sha256):([0-9a-fA-F]+)$")
_HEX_DIGITS = {"md5": 32, "sha256": 64}
# Big reads keep a 250 MB download from spending its time in flushes (pooch's default is 1 KiB).
CHUNK_BYTES = 1 << 20
TIMEOUT_S = 60.0


def parse_checksum(text: str) -> str:
    """'md5:<32 hex>' or 'sha256:<64 hex>', normalised to lower case, as pooch takes it."""
    match = _CHECKSUM.match(text.strip())
    if not match or len(match.group(2)) != _HEX_DIGITS[match.group(1)]:
        raise GpureproError(f"checksum '{text}' is not 'md5:<32 hex digits>' or 'sha256:<64 hex digits>'")
    return f"{match.group(1)}:{match.group(2).lower()}"


def checksum_matches(path: Path, checksum: str) -> bool:
    """Whether the file has this checksum; shows progress, as ImageNet's archives take minutes to hash."""
    algorithm, digest = parse_checksum(checksum).split(":")
    hasher = hashlib.new(algorithm)
    size = path.stat().st_size
    with (
        path.open("rb") as fh,
        tqdm(total=size, unit="B", unit_scale=True, desc=f"{algorithm} {path.name}") as bar,
    ):
        for block in iter(lambda: fh.read(CHUNK_BYTES), b""):
            hasher.update(block)
            bar.update(len(block))
    return hasher.hexdigest() == digest


def _downloader(url: str) -> pooch.HTTPDownloader | None:
    """HTTP(S) with a progress bar, large chunks and a timeout; pooch's own choice for other schemes."""
    if urlparse(url).scheme in ("http", "https"):
        return pooch.HTTPDownloader(progressbar=True, chunk_size=CHUNK_BYTES, timeout=TIMEOUT_S)
    return None


def download(urls: Sequence[str], checksum: str, out: Path, attempts: int = 3) -> Path:
    """Fetch `out` from the first address that delivers a file with this checksum.

    Raises a GpureproError listing every address and why it failed; `out` is then unchanged (absent,
    or the file that was there before).
    """
    if not urls:
        raise GpureproError(f"no address to download {out.name} from")
    if attempts < 1:
        raise GpureproError(f"attempts must be 1 or more, got {attempts}")
    checksum = parse_checksum(checksum)
    failures = []
    for url in urls:
        store = pooch.create(
            path=out.parent,
            base_url="",
            registry={out.name: checksum},
            urls={out.name: url},
            retry_if_failed=attempts - 1,
        )
        try:
            return Path(store.fetch(out.name, downloader=_downloader(url), progressbar=True))
        except (ValueError, requests.RequestException, OSError) as err:
            failures.append(f"{url}: {type(err).__name__}: {err}")
    listing = "; ".join(failures)
    state = "the file there was kept" if out.exists() else "nothing was written"
    raise GpureproError(
        f"could not download {out.name} with checksum {checksum} from any of {len(urls)} address(es) "
        f"({state}): {listing}"
    )
