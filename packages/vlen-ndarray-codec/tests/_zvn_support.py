"""Helpers the tests of the zarr packages share: README examples run as written, scripts in a
fresh interpreter, entry points, a local Dask cluster, zarr's own object writes as a reference,
and the registry's vector runner.

This file is tools/nox/test_support.py; registry/examples/generate.py copies it into each
package's tests/ under a package-unique name (a package's sdist holds only its own tests) and
its --check fails when a copy differs: edit the original. Imports only the standard library at
the top; pytest, zarr and dask inside the helpers that need them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
#: A README block whose first line is ``# needs: module>=version, module`` runs only where
#: those import (:func:`skip_unless_importable`).
_NEEDS = re.compile(r"# needs: (.*)\n")


def readme_examples(readme: str | os.PathLike[str]) -> dict[str, str]:
    """The ```` ```python ```` blocks of a Markdown file, in order, keyed ``block0``, ...
    (keys that suit ``pytest.mark.parametrize(..., ids=...)``)."""
    text = Path(readme).read_text(encoding="utf-8")
    return {f"block{i}": code for i, code in enumerate(_PYTHON_BLOCK.findall(text))}


def skip_unless_importable(code: str) -> None:
    """Skip the running test unless the modules a README block's ``# needs:`` line names import
    (at the versions it names)."""
    import pytest

    needs = _NEEDS.match(code)
    for requirement in needs.group(1).split(",") if needs else ():
        module, _, minversion = requirement.strip().partition(">=")
        pytest.importorskip(module, minversion=minversion or None)


def run_script(
    code: str, cwd: str | os.PathLike[str], *, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) as ``script.py`` in ``cwd`` with a fresh interpreter, warnings
    ignored (the output is what a reader sees). A file rather than ``-c``, so that spawned
    workers (Dask, multiprocessing) can import ``__main__`` again. Raises AssertionError with
    the script's stderr when it fails; returns the finished process (``stdout`` to check)."""
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


def assert_printed_as_commented(code: str, stdout: str) -> None:
    """Each ``print(...)  # X`` line of ``code``, in order, printed the line X of ``stdout``
    (a colon in X starts a remark for the reader, which is not compared)."""
    expected = re.findall(r"print\(.*\)  # (.*)", code)
    for want, got in zip(expected, stdout.splitlines(), strict=True):
        assert got == want.split(":")[0].strip(), (got, want)


def assert_entry_point(group: str, name: str, value: str, target: object) -> None:
    """The installed distributions declare exactly one entry point ``name`` in ``group``, whose
    value is ``value`` and which loads ``target``."""
    found = [e for e in entry_points(group=group) if e.name == name]
    assert len(found) == 1, f"{len(found)} entry points {name!r} in {group!r}, expected one"
    (point,) = found
    assert point.value == value, f"entry point {name!r} in {group!r} is {point.value!r}"
    loaded = point.load()
    assert loaded is target, f"entry point {name!r} in {group!r} loads {loaded!r}, not {target!r}"


def load_runner(tests: str | os.PathLike[str], name: str) -> ModuleType:
    """The registry's vector runner copied into ``tests/golden/registry/runner.py`` (a copy of
    registry/runner.py), imported as the module ``name``."""
    path = Path(tests) / "golden" / "registry" / "runner.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def local_cluster(*upload: str | os.PathLike[str], timeout: float = 60.0) -> Iterator[Any]:
    """A ``distributed.Client`` of two single-threaded worker processes on 127.0.0.1, spawned,
    with the files ``upload`` imported on each; every step bounded by ``timeout`` seconds, the
    cluster always closed. Its dashboard takes a free port (8787 may be taken)."""
    dask = importlib.import_module("dask")
    distributed = importlib.import_module("distributed")
    with dask.config.set({"distributed.worker.multiprocessing-method": "spawn"}):
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
            death_timeout=timeout,
        )
    try:
        with distributed.Client(cluster, timeout=timeout) as client:
            client.wait_for_workers(2, timeout=timeout)
            for path in upload:
                client.upload_file(os.fspath(path))
            yield client
    finally:
        cluster.close(timeout=timeout)


@contextlib.contextmanager
def zarr_own_writes() -> Iterator[None]:
    """Object writes (``array[...] = cells``) as zarr makes them without zarr_ndarray_dtype's
    write hook: chunk by chunk through the codec's object path. Tests compare what the columnar
    engine stores with what this stores."""
    from zarr import AsyncArray

    hooked = AsyncArray.__dict__["_set_selection"]
    AsyncArray._set_selection = hooked.__wrapped__  # type: ignore[method-assign]
    try:
        yield
    finally:
        AsyncArray._set_selection = hooked  # type: ignore[method-assign]
