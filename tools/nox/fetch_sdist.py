"""Download a distribution's sdist from the index and unpack it; print the unpacked folder.

    python tools/nox/fetch_sdist.py DIST==VERSION WORK_DIR

Run by noxfile.py's ``suite020`` and ``zarr_suite`` sessions (with an interpreter that has pip)
to get another project's own tests: only an sdist ships them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path


def main(requirement: str, work: Path) -> int:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         requirement, "--dest", str(work)],
        check=True,
    )  # fmt: skip
    (sdist,) = work.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    (folder,) = (p for p in work.iterdir() if p.is_dir())
    print(folder)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
