"""Check that every declared lower bound of our distributions is what is installed; pin it all.

    python tools/nox/check_floors.py --pin CONSTRAINTS_TXT DIST[EXTRA,...] ...

The floor session installs our packages with uv's ``--resolution lowest-direct``; this proves the
resolver really reached each ``>=`` floor the packages declare (for the named extras too), so a
floor that cannot be installed is caught instead of being silently raised. A floor ``1.26`` is
reached by any ``1.26.x``. Requirements on our own distributions are skipped (they are local).
CONSTRAINTS_TXT receives ``name==version`` of every other installed distribution, so the test
tools installed next cannot move a floor.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

_ARG = re.compile(r"^(?P<dist>[A-Za-z0-9._-]+)(?:\[(?P<extras>[A-Za-z0-9_,-]*)\])?$")


def floors(dist: str, extras: set[str]) -> dict[str, Version]:
    """``{requirement name: lower bound}`` for every ``>=`` requirement of dist (with extras)."""
    found: dict[str, Version] = {}
    for line in importlib.metadata.requires(dist) or []:
        req = Requirement(line)
        if req.marker is not None and not any(
            req.marker.evaluate({"extra": extra}) for extra in extras | {""}
        ):
            continue
        for spec in req.specifier:
            if spec.operator == ">=":
                found[req.name] = Version(spec.version)
    return found


def reaches(installed: Version, floor: Version) -> bool:
    """``1.26.4`` reaches the floor ``1.26``; ``1.27.0`` or ``2.0`` do not."""
    depth = len(floor.release)
    return installed.release[:depth] == floor.release and not installed.is_prerelease


def parse(arg: str) -> tuple[str, set[str]]:
    match = _ARG.match(arg)
    if match is None:
        raise SystemExit(f"cannot parse {arg!r}; expected DIST or DIST[EXTRA,...]")
    return match["dist"], set(filter(None, (match["extras"] or "").split(",")))


def pin_installed(constraints: Path, ours: set[str]) -> None:
    """Write ``name==version`` of every installed distribution but ours to constraints."""
    pins = {
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
        if canonicalize_name(dist.metadata["Name"]) not in ours
    }
    constraints.write_text("".join(f"{pin}\n" for pin in sorted(pins)), encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pin", type=Path, required=True, metavar="CONSTRAINTS_TXT")
    parser.add_argument("dists", nargs="+", metavar="DIST[EXTRA,...]")
    args = parser.parse_args(argv)
    wanted = [parse(arg) for arg in args.dists]
    ours: set[str] = {canonicalize_name(dist) for dist, _ in wanted}
    pin_installed(args.pin, ours)
    problems = []
    for dist, extras in wanted:
        for name, floor in sorted(floors(dist, extras).items()):
            if canonicalize_name(name) in ours:
                continue
            installed = Version(importlib.metadata.version(name))
            ok = reaches(installed, floor)
            verdict = "ok" if ok else "NOT AT FLOOR"
            print(f"{verdict}: {dist} needs {name}>={floor}, installed {installed}")
            if not ok:
                problems.append(f"{name} {installed} (floor {floor})")
    if problems:
        print(f"not at the declared floor: {', '.join(problems)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
