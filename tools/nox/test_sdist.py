"""Unpack a package's sdist and run its tests against the installed wheel (build session).

    python tools/nox/test_sdist.py SDIST [PYTEST_OPTION ...]

The tests run from the unpacked sdist folder with the given options (noxfile.py passes the root
pyproject.toml as ``-c``); only the config's ``pythonpath`` is replaced, by the sdist's own tests
folder, so the tests see nothing of the repository. A test module that fails to import fails
the run but does not hide the results of the others.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path


def main(sdist: Path, options: list[str]) -> int:
    unpacked = sdist.parent / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (folder,) = unpacked.iterdir()
    command = [
        sys.executable, "-m", "pytest", *options, "--rootdir", ".",
        "-o", f"pythonpath={folder / 'tests'}", "--continue-on-collection-errors", "tests",
    ]  # fmt: skip
    print(f"in {folder}: {shlex.join(command)}", flush=True)
    return subprocess.run(command, cwd=folder, check=False).returncode


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
