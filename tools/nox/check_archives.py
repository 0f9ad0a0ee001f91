"""Check what a package's built sdist and wheel contain (used by noxfile.py's build session).

    python tools/nox/check_archives.py SDIST WHEEL MODULE [SIBLING_MODULE ...]

The sdist holds one top-level folder with only the package's allowlisted entries (plus what the
build backend adds), its src/MODULE/, and no file of a sibling package; the wheel holds MODULE and
its .dist-info only.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path

# The packages' sdist allowlist (only-include in their pyproject.toml) plus what hatchling adds:
# PKG-INFO, and a copy of the repository's .gitignore.
SDIST_ALLOWED_TOP = {"src", "tests", "README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO"}
SDIST_ALLOWED_TOP.add(".gitignore")
SDIST_ALLOWED_TOP |= {"setup.py", "setup.cfg"}  # setuptools, the compiled package's backend


def sdist_problems(sdist: Path, module: str, siblings: list[str]) -> list[str]:
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = {name.split("/", 1)[0] for name in names}
    if len(top) != 1:
        return [f"{sdist.name}: expected one top-level folder, found {sorted(top)}"]
    members = [name.split("/", 1)[1] for name in names if "/" in name]
    problems = []
    stray = sorted({m.split("/", 1)[0] for m in members} - SDIST_ALLOWED_TOP)
    leaked = [m for m in members if any(s in m.split("/") for s in siblings)]
    if stray or leaked:
        problems.append(f"{sdist.name}: unexpected entries {stray}, sibling files {leaked}")
    if not any(m.startswith(f"src/{module}/") for m in members):
        problems.append(f"{sdist.name}: does not contain src/{module}/")
    if not problems:
        print(f"ok: {sdist.name} holds {len(members)} entries, none from siblings")
    return problems


def wheel_problems(wheel: Path, module: str) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        top = {name.split("/", 1)[0] for name in archive.namelist()}
    extra = sorted(t for t in top - {module} if not t.endswith(".dist-info"))
    if extra or module not in top:
        return [f"{wheel.name}: top-level entries {sorted(top)}, expected {module}"]
    print(f"ok: {wheel.name} holds only {module}")
    return []


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    sdist, wheel, module, *siblings = argv
    problems = sdist_problems(Path(sdist), module, siblings)
    problems += wheel_problems(Path(wheel), module)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
