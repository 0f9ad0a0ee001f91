"""Print the Python and the resolved version of each named distribution (used by noxfile.py).

Every nox session that installs something calls this first, so a cell of the test matrix can
never silently test another release than its name says.

    python tools/nox/print_versions.py zarr numcodecs numpy ...
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys


def version_of(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-- not installed --"


def main(argv: list[str]) -> int:
    print(f"{'python':<22}{platform.python_version()}  ({sys.executable})")
    for dist in argv:
        print(f"{dist:<22}{version_of(dist)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
