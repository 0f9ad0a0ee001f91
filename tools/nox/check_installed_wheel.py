"""Check one wheel installed alone in a fresh venv (used by noxfile.py's build session).

    python tools/nox/check_installed_wheel.py DIST MODULE EXPECTED_JSON [--forbids-zarr]
        [--script NAME ...]

EXPECTED_JSON maps "group name" of every zarr.* entry point the wheel must declare to its
"module:attr" target ("" accepts any target). The module must import, each expected entry point
must load, no other zarr.* entry point may exist, with --forbids-zarr zarr must not have been
pulled in, and every --script must be a console script of the wheel that loads.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import sys


def check(
    dist: str, module: str, expected: dict[str, str], forbids_zarr: bool, scripts: list[str]
) -> list[str]:
    """Return the problems found (empty when the wheel is fine); print what was checked."""
    importlib.import_module(module)
    entry_points = importlib.metadata.distribution(dist).entry_points
    consoles = {ep.name: ep for ep in entry_points if ep.group == "console_scripts"}
    if sorted(consoles) != sorted(scripts):
        return [f"{dist}: console scripts {sorted(consoles)} differ from {sorted(scripts)}"]
    for name, ep in sorted(consoles.items()):
        print(f"ok: console script {name} -> {ep.value} loads {ep.load()!r}")
    found = {f"{ep.group} {ep.name}": ep for ep in entry_points if ep.group.startswith("zarr.")}
    if set(found) != set(expected):
        return [f"{dist}: zarr entry points {sorted(found)} differ from {sorted(expected)}"]
    problems = []
    for key, ep in sorted(found.items()):
        if expected[key] and ep.value != expected[key]:
            problems.append(f"{dist}: entry point {key} -> {ep.value}, expected {expected[key]}")
            continue
        print(f"ok: entry point {key} -> {ep.value} loads {ep.load()!r}")
    if forbids_zarr and importlib.util.find_spec("zarr") is not None:
        problems.append(f"{dist}: installing the wheel alone pulled in zarr")
    if not problems:
        print(f"ok: {dist} {importlib.metadata.version(dist)} imports as {module}")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dist")
    parser.add_argument("module")
    parser.add_argument("expected", help='JSON: {"group name": "module:attr" or ""}')
    parser.add_argument("--forbids-zarr", action="store_true")
    parser.add_argument("--script", action="append", default=[], help="a console script")
    args = parser.parse_args(argv)
    expected = json.loads(args.expected)
    if not isinstance(expected, dict):
        parser.error(f"EXPECTED_JSON must be an object, got {args.expected!r}")
    problems = check(args.dist, args.module, expected, args.forbids_zarr, args.script)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
