"""The CA bundle pip trusts inside the image build. Where a site's network inspects TLS, pip inside the
build must trust the same certificates as pip on the host: `auto` finds the bundle the host's pip uses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..errors import GpureproError


def host_ca_bundle() -> Path | None:
    """The CA bundle pip trusts on this machine: PIP_CERT, else pip's configured `cert`, else the bundle
    requests or OpenSSL are told to use; None when pip uses its own (certifi's)."""
    candidates = [os.environ.get("PIP_CERT")]
    configured = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.cert"], capture_output=True, text=True
    )
    candidates += [configured.stdout.strip() if configured.returncode == 0 else None]
    candidates += [os.environ.get("REQUESTS_CA_BUNDLE"), os.environ.get("SSL_CERT_FILE")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def chosen_ca_bundle(choice: str) -> Path | None:
    """The bundle a build's `--ca-bundle` choice names: a file, 'auto' (host_ca_bundle) or 'none'."""
    if choice == "none":
        return None
    if choice == "auto":
        return host_ca_bundle()
    path = Path(choice)
    if not path.is_file():
        raise GpureproError(f"--ca-bundle {choice}: no such file")
    return path
