"""Helpers for the tests of this package and of the codec packages built on it.

Only the standard library: importing this module adds nothing to the installed package's
dependencies. :func:`readme_examples` takes the Python examples out of a README and
:func:`run_script` runs one (or any other code) as its own program, so each package's tests can
check that what its README shows runs as written; :func:`assert_entry_point` checks one
plug-in declaration of the installed distributions.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

__all__ = ["assert_entry_point", "readme_examples", "run_script"]

_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def readme_examples(readme: str | os.PathLike[str]) -> dict[str, str]:
    """The ```` ```python ```` blocks of a Markdown file, in order, keyed ``block0``, ``block1``...

    The keys suit ``pytest.mark.parametrize(..., ids=...)``.
    """
    text = Path(readme).read_text(encoding="utf-8")
    return {f"block{i}": code for i, code in enumerate(_PYTHON_BLOCK.findall(text))}


def run_script(
    code: str, cwd: str | os.PathLike[str], *, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) as the script ``script.py`` in ``cwd`` with a fresh interpreter.

    A file rather than ``-c``, so that spawned worker processes (Dask, multiprocessing) can
    import ``__main__`` again. Warnings are ignored: the output is what a reader sees. Raises
    :class:`AssertionError` with the script's stderr when it exits with an error; returns the
    finished process otherwise (its ``stdout`` for checks of what the script prints).
    """
    script = Path(cwd) / "script.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"the script exited with {done.returncode}:\n{done.stderr}")
    return done


def assert_entry_point(group: str, name: str, value: str, target: object) -> None:
    """The installed distributions declare exactly one entry point ``name`` in ``group``, whose
    value is ``value`` and which loads ``target``; :class:`AssertionError` otherwise."""
    found = [e for e in entry_points(group=group) if e.name == name]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} entry points {name!r} in {group!r}, expected one")
    (point,) = found
    if point.value != value:
        raise AssertionError(f"entry point {name!r} in {group!r} is {point.value!r}, not {value!r}")
    loaded = point.load()
    if loaded is not target:
        raise AssertionError(f"entry point {name!r} in {group!r} loads {loaded!r}, not {target!r}")
