"""Fetch zarr-vlen-ndarray 0.2.0's sdist and run its own tests/ against the installed packages.

    python tools/nox/run_suite020.py WORK_DIR JUNIT_XML

Run by noxfile.py's ``suite020`` session with the session's interpreter (our packages and one zarr
installed). Only the sdist's ``tests/`` folder is used, under 0.2.0's own (empty) pytest
settings, so the suite imports OUR ``zarr_vlen_ndarray``. Failures are not judged here: the
session compares the junit report with the allow-list next. Exits non-zero only when the suite
could not run at all.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

DIST = "zarr-vlen-ndarray==0.2.0"
TIMEOUT_S = 300


def main(work: Path, junit: Path) -> int:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         DIST, "--dest", str(work)],
        check=True,
    )  # fmt: skip
    (sdist,) = work.glob("zarr_vlen_ndarray-0.2.0.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    run = work / "run"
    shutil.copytree(work / "zarr_vlen_ndarray-0.2.0" / "tests", run / "tests")
    (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(run / "pytest.ini"), "--rootdir", str(run),
         "-p", "no:cacheprovider", f"--timeout={TIMEOUT_S}", f"--junitxml={junit}", "-q",
         str(run / "tests")],
        check=False,
    )  # fmt: skip
    return 0 if result.returncode in (0, 1) else result.returncode  # 1: some tests failed


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
