"""Provenance of a build of the CUDA SGEMM programs, written by kernels/Makefile beside the binaries.

cuBLAS's version chooses the kernel an SGEMM runs, and cuRAND's makes the operands, so a build records
the toolkit nvcc belongs to and, for each library it linked, the file, its version, and whether the
toolkit or a pip wheel (nvidia-cublas, nvidia-curand: `pip install -e '.[kernels]'`) brought it.

Standard library only: the Makefile runs this module from the checkout (PYTHONPATH=src) with whichever
Python finds the wheels, installed gpurepro or not.

    python -m gpurepro.sgemm.build --nvcc nvcc --cuda-home /usr/local/cuda --arch sm_90 \\
        --library cublas=/path/libcublas.so.13 --library curand=/path/libcurand.so.10 --out build.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

NVCC_RELEASE = re.compile(r"release (?P<release>[\d.]+), V(?P<version>[\d.]+)")
# version.json names the toolkit's components; these are the ones a build uses.
TOOLKIT_COMPONENTS = ("cuda", "cuda_nvcc", "cuda_cudart", "libcublas", "libcurand")


def nvcc_version(nvcc: str) -> dict[str, Any]:
    """Release and full version of nvcc (`release 13.0, V13.0.88`) and its build line."""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True, timeout=60).stdout
    found = NVCC_RELEASE.search(out)
    if found is None:
        raise ValueError(f"{nvcc} --version does not name a release: {out.strip()[-300:]}")
    build = [line for line in out.splitlines() if line.startswith("Build ")]
    return {"path": nvcc, **found.groupdict(), "build": build[0].split(" ", 1)[1] if build else None}


def toolkit_versions(cuda_home: Path) -> dict[str, str]:
    """The toolkit's component versions: those a build uses from version.json (installers since CUDA
    11.1 write it), else every component a toolkit assembled from NVIDIA's wheels lists in dist-info/
    (nvidia_cuda_runtime-13.0.96.dist-info); none, rather than a guess, where it has neither."""
    try:
        components = json.loads((cuda_home / "version.json").read_text())
    except (OSError, ValueError):
        folders = sorted((cuda_home / "dist-info").glob("*-*.dist-info"))
        return dict(folder.name.removesuffix(".dist-info").rsplit("-", 1) for folder in folders)
    return {name: components[name]["version"] for name in TOOLKIT_COMPONENTS if name in components}


def owning_distribution(path: Path) -> metadata.Distribution | None:
    """The installed distribution (wheel) whose RECORD lists the file `path`, or None."""
    target = path.resolve()
    for dist in metadata.distributions():
        for file in dist.files or ():
            if file.name == target.name and Path(str(dist.locate_file(file))).resolve() == target:
                return dist
    return None


def file_version(path: Path) -> str | None:
    """The version a shared library's file name carries (libcublas.so.13.0.0.19 -> 13.0.0.19)."""
    name = path.resolve().name
    return name.split(".so.", 1)[1] if ".so." in name else None


def library(path: Path, cuda_home: Path, toolkit: dict[str, str], name: str) -> dict[str, Any]:
    """Where library `name` (curand) came from, and its version: a wheel's own version, else the
    toolkit's (version.json's libcurand or dist-info's nvidia_curand), else the one in its file name."""
    entry: dict[str, Any] = {"path": str(path), "file": str(path.resolve())}
    dist = owning_distribution(path)
    if dist is not None:
        return {**entry, "from": "wheel", "distribution": dist.metadata["Name"], "version": dist.version}
    in_toolkit = path.resolve().is_relative_to(cuda_home.resolve())
    version = (toolkit.get(f"lib{name}") or toolkit.get(f"nvidia_{name}")) if in_toolkit else None
    return {**entry, "from": "toolkit" if in_toolkit else "system", "version": version or file_version(path)}


def digest(paths: list[Path]) -> str:
    """sha256 over the files' names and contents, in the order given."""
    sha = hashlib.sha256()
    for path in paths:
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()


def build_provenance(args: argparse.Namespace) -> dict[str, Any]:
    cuda_home = Path(args.cuda_home)
    toolkit = toolkit_versions(cuda_home)
    sources = sorted(p for p in Path(args.sources).iterdir() if p.is_file()) if args.sources else []
    return {
        "arch": args.arch,
        "nvcc": nvcc_version(args.nvcc),
        "nvcc_flags": args.flags,
        "cuda_home": str(cuda_home),
        "toolkit": toolkit,
        "libraries": {name: library(Path(path), cuda_home, toolkit, name) for name, path in args.library},
        "python": {"executable": sys.executable, "version": platform.python_version()},
        "sources_sha256": digest(sources) if sources else None,
        "binaries_sha256": {Path(b).name: digest([Path(b)]) for b in args.binary},
        "host": platform.node(),
        "time": datetime.now(timezone.utc).isoformat(),
    }


def name_and_path(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(
            f"--library {text!r}: expected NAME=PATH, e.g. curand=/x/libcurand.so.10"
        )
    return name, path


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gpurepro.sgemm.build", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--nvcc", required=True, help="the nvcc the build used")
    parser.add_argument("--cuda-home", required=True, help="the toolkit root nvcc reports")
    parser.add_argument("--arch", required=True, help="the architecture built, e.g. sm_90")
    parser.add_argument("--flags", default="", help="the nvcc flags of the build")
    parser.add_argument("--library", type=name_and_path, action="append", default=[], help="NAME=PATH linked")
    parser.add_argument("--sources", help="the folder of the sources built (kernels/)")
    parser.add_argument("--binary", action="append", default=[], help="a binary built (its sha256 is kept)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    record = build_provenance(args)
    partial = args.out.with_name(f"{args.out.name}.tmp")  # written whole, then renamed: never half a file
    partial.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(partial, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
