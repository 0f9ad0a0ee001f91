"""Check a fresh venv into which one "From source" line of README.md installed packages (used by
noxfile.py's ``install`` session, run by the venv's own interpreter).

    python tools/nox/check_source_install.py ROOT ARG [ARG ...]

Each ARG is a ``pip install`` argument of that line (``./packages/ndarray-tool[export]``). For
each, the distribution its ``pyproject.toml`` names must be installed from that folder of the
checkout (pip's ``direct_url.json``), and its module must import (its extras too). Every package
of this repository found in the venv must come from the checkout: none may come from PyPI (where
``zarr-vlen-ndarray`` is still the predecessor 0.2.0). Every console script installed from the
checkout must run ``--version`` and name each of them with its version.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

#: Our distributions, by the folder under packages/ that holds each.
OURS = {
    "ndarray-dtype": "zarr-ndarray-dtype",
    "vlen-ndarray-codec": "zarr-vlen-ndarray",
    "ragged-ndarray-codec": "zarr-ragged-ndarray",
    "nd-arrow": "nd-arrow",
    "ndarray-tool": "zarr-ndarray-tool",
}
#: What an extra adds that must import.
EXTRA_MODULES = {("nd-arrow", "zarr"): "nd_arrow.zarr_bridge", ("zarr-ndarray-tool", "export"):
                 "nd_arrow.zarr_bridge"}  # fmt: skip


def origin(dist: str) -> str | None:
    """The URL pip installed ``dist`` from (None: from an index)."""
    text = importlib.metadata.distribution(dist).read_text("direct_url.json")
    return str(json.loads(text)["url"]) if text else None


def check(root: Path, args: list[str]) -> list[str]:
    problems = []
    named: dict[str, list[str]] = {}
    for arg in args:
        match = re.fullmatch(r"(\./packages/[\w.-]+)(?:\[([\w,]+)\])?", arg)
        if match is None:
            problems.append(f"{arg!r} is not ./packages/<folder>[extras]")
            continue
        pyproject = (root / match[1] / "pyproject.toml").read_text(encoding="utf-8")
        project = tomllib.loads(pyproject)["project"]
        named[project["name"]] = match[2].split(",") if match[2] else []
    for folder, dist in OURS.items():
        try:
            url = origin(dist)
        except importlib.metadata.PackageNotFoundError:
            if dist in named:
                problems.append(f"{dist} is not installed")
            continue
        want = (root / "packages" / folder).resolve().as_uri()
        if url != want:
            problems.append(f"{dist} was installed from {url or 'an index'}, not from {want}")
            continue
        version = importlib.metadata.version(dist)
        module = dist.replace("-", "_")
        importlib.import_module(module)
        for extra in named.get(dist, []):
            importlib.import_module(EXTRA_MODULES.get((dist, extra), module))
        print(f"ok: {dist} {version} from {url}, imports as {module}")
        for ep in importlib.metadata.distribution(dist).entry_points:
            if ep.group == "console_scripts":
                problems += check_script(ep.name)
    return problems


def check_script(name: str) -> list[str]:
    """The console script runs from the venv's bin folder and names every package of ours that
    is installed, with its version."""
    script = Path(sysconfig.get_path("scripts"), name)
    done = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode:
        return [f"{script} --version exited {done.returncode}: {done.stderr.strip()}"]
    lines = done.stdout.splitlines()
    missing = [
        f"{dist} {importlib.metadata.version(dist)}"
        for dist in OURS.values()
        if dist in {d.metadata["Name"] for d in importlib.metadata.distributions()}
        and f"{dist} {importlib.metadata.version(dist)}" not in lines
    ]
    if missing:
        return [f"{script} --version does not name {missing}: {lines}"]
    print(f"ok: {script} --version names every package installed")
    return []


def main(argv: list[str]) -> int:
    root, args = Path(argv[0]), argv[1:]
    problems = check(root, args)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
