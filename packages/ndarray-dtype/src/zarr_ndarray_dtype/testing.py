"""Helpers for the tests of this package and the codec packages built on it.

Only the standard library: importing this module adds nothing to the installed package's
dependencies. :func:`readme_examples` takes the Python examples out of a README and
:func:`run_example` runs one as its own program, so each package's tests can check that the
examples its README shows run as written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["readme_examples", "run_example"]

_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def readme_examples(readme: str | os.PathLike[str]) -> dict[str, str]:
    """The ```` ```python ```` blocks of a Markdown file, in order, keyed ``block0``, ``block1``...

    The keys suit ``pytest.mark.parametrize(..., ids=...)``.
    """
    text = Path(readme).read_text(encoding="utf-8")
    return {f"block{i}": code for i, code in enumerate(_PYTHON_BLOCK.findall(text))}


def run_example(
    code: str, cwd: str | os.PathLike[str], *, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as the script ``example.py`` in ``cwd`` with a fresh interpreter.

    A file rather than ``-c``, so that spawned worker processes (Dask, multiprocessing) can
    import ``__main__`` again. Warnings are ignored: the example's output is what a reader sees.
    Raises :class:`AssertionError` with the example's stderr when it exits with an error; returns
    the finished process otherwise (its ``stdout`` for checks of what the example prints).
    """
    script = Path(cwd) / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"the example exited with {done.returncode}:\n{done.stderr}")
    return done
