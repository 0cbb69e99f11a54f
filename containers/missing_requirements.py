"""Print the project's dependencies (pyproject.toml) that the image's base does not have yet.

A base that already has a package keeps its own build of it: NVIDIA's PyTorch images carry CUDA builds
of torch and torchvision with pre-release version numbers (2.x.0a0+...), which pip would otherwise try to
replace with generic wheels from PyPI.

    python3 missing_requirements.py pyproject.toml > requirements.txt
"""

import re
import sys
from importlib.metadata import PackageNotFoundError, version

import tomllib


def distribution_name(requirement: str) -> str:
    """'torch>=2.3' -> 'torch' (the name before any version, extra or marker)."""
    return re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0]


def main(pyproject: str) -> None:
    with open(pyproject, "rb") as fh:
        requirements = tomllib.load(fh)["project"]["dependencies"]
    for requirement in requirements:
        try:
            found = version(distribution_name(requirement))
        except PackageNotFoundError:
            print(requirement)
        else:
            print(f"base has {distribution_name(requirement)} {found}: kept", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
