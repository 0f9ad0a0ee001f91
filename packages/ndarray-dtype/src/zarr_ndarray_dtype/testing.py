"""Helpers the tests of this package and of the packages built on it share (a package's sdist
holds only its own tests): README examples run as written, scripts in a fresh interpreter,
entry points, the private-zarr check, a local Dask cluster, zarr's own object writes as a
reference. Imports only the standard library; zarr,
numpy and dask only inside the helpers that need them.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

__all__ = [
    "assert_entry_point",
    "assert_printed_as_commented",
    "assert_zarr_private_only_in_compat",
    "local_cluster",
    "readme_examples",
    "run_script",
    "zarr_own_writes",
    "zarr_private_names",
    "zarr_private_uses",
]

_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def readme_examples(readme: str | os.PathLike[str]) -> dict[str, str]:
    """The ```` ```python ```` blocks of a Markdown file, in order, keyed ``block0``, ``block1``...

    The keys suit ``pytest.mark.parametrize(..., ids=...)``.
    """
    text = Path(readme).read_text(encoding="utf-8")
    return {f"block{i}": code for i, code in enumerate(_PYTHON_BLOCK.findall(text))}


#: A README block whose first line is ``# needs: module>=version, module`` runs only where those
#: import (:func:`skip_unless_importable`).
_NEEDS = re.compile(r"# needs: (.*)\n")


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


def assert_printed_as_commented(code: str, stdout: str) -> None:
    """Each ``print(...)  # X`` line of ``code``, in order, printed the line X of ``stdout``.

    A colon in X starts a remark for the reader, which is not compared.
    """
    expected = re.findall(r"print\(.*\)  # (.*)", code)
    for want, got in zip(expected, stdout.splitlines(), strict=True):
        assert got == want.split(":")[0].strip(), (got, want)


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


def zarr_private_names() -> set[str]:
    """Every private name (one leading underscore) that zarr's modules and classes define or
    declare (``zarr.testing`` left out: it imports pytest plug-ins)."""
    import zarr

    names: set[str] = set()
    todo: list[tuple[str, Iterable[str]]] = [("zarr", zarr.__path__)]
    while todo:
        prefix, path = todo.pop()
        for info in pkgutil.iter_modules(path):
            name = f"{prefix}.{info.name}"
            if info.name == "testing" or info.name.startswith("_"):
                continue
            try:
                module = importlib.import_module(name)
            except Exception:  # optional dependencies of some zarr modules
                continue
            if info.ispkg:
                todo.append((name, module.__path__))
            for attr, value in vars(module).items():
                if attr.startswith("_") and not attr.startswith("__"):
                    names.add(attr)
                if isinstance(value, type) and value.__module__.startswith("zarr"):
                    # class attributes, and the instance attributes its annotations declare
                    members = [*vars(value), *inspect.get_annotations(value)]
                    names.update(n for n in members if n.startswith("_") and not n.startswith("__"))
    return names


#: The underscore methods zarr's base classes ask their subclasses to implement (no public
#: spelling exists): overriding these is how a codec or data type plugs in, in every zarr 3
#: release; any other override of a private zarr name counts as a use.
SUBCLASS_HOOKS = {
    "_decode_single": "zarr.abc.codec.BaseCodec, per-chunk decode (every zarr 3 release)",
    "_encode_single": "zarr.abc.codec.BaseCodec, per-chunk encode (every zarr 3 release)",
    "_decode_sync": "the synchronous codec protocol of zarr >= 3.1.6 (FusedCodecPipeline)",
    "_encode_sync": "the synchronous codec protocol of zarr >= 3.1.6 (FusedCodecPipeline)",
    "_sync_capable": "zarr >= 3.3.0: a codec of that protocol that cannot run it says so",
    "_check_json_v2": "zarr.dtype.ZDType, JSON check (zarr >= 3.1.0)",
    "_check_json_v3": "zarr.dtype.ZDType, JSON check (zarr >= 3.1.0)",
    "_from_json_v2": "zarr.dtype.ZDType, JSON decode (zarr >= 3.1.0)",
    "_from_json_v3": "zarr.dtype.ZDType, JSON decode (zarr >= 3.1.0)",
    "_check_scalar": "zarr.dtype.ZDType, scalar check (zarr >= 3.1.0)",
}


def zarr_private_uses(
    source: str | os.PathLike[str], compat: str = "_compat.py", *, inside: bool = False
) -> list[str]:
    """``file:line name`` of every use of a private zarr member in a package's source folder
    outside its ``compat`` module (``inside``: in it): ``other._name`` (not on ``self`` /
    ``cls``), ``getattr(x, "_name")``, ``from zarr... import _name`` and methods overriding
    ``_name`` (but :data:`SUBCLASS_HOOKS`), for names zarr defines and the package does not."""
    files = sorted(Path(source).rglob("*.py"))
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in files}
    zarrs = zarr_private_names()
    ours = {p.stem for p in files}  # the package's own (private) modules
    overrides = []  # methods of subclasses named like zarr's private members
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.bases:
                overrides += [
                    (path, n)
                    for n in node.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                ours.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                owner = node.value  # only its own attributes: ``other._x = ...`` is zarr's too
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    ours.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                ours.add(node.id)
    private = zarrs - ours
    found = [
        f"{path.name}:{n.lineno} {n.name}"
        for path, n in overrides
        if (path.name == compat) == inside and n.name in zarrs and n.name not in SUBCLASS_HOOKS
    ]
    for path, tree in trees.items():
        if (path.name == compat) != inside:
            continue
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in private:
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    name = node.attr
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "getattr",
                "hasattr",
            ):
                if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    value = node.args[1].value
                    name = value if isinstance(value, str) and value in private else None
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "zarr":
                bad = [a.name for a in node.names if a.name.startswith("_")]
                name = bad[0] if bad else None
            if name is not None:
                found.append(f"{path.name}:{getattr(node, 'lineno', 0)} {name}")
    return found


def assert_zarr_private_only_in_compat(
    package: str, allowed: dict[str, str], foreign: dict[str, str] | None = None
) -> None:
    """Private zarr members are used in ``package``'s ``_compat`` module only, and only those
    in ``allowed`` (name -> the zarr releases that need it); ``foreign`` names (name -> whose
    they are) belong to another library and happen to be private names of zarr's too.
    Raises :class:`AssertionError` otherwise."""
    source = Path(importlib.import_module(package).__file__ or "").parent
    others = foreign or {}
    outside = [u for u in zarr_private_uses(source) if u.split()[1] not in others]
    if outside:
        raise AssertionError(f"{package} uses private zarr members outside _compat: {outside}")
    unlisted = [u for u in zarr_private_uses(source, inside=True) if u.split()[1] not in allowed]
    if unlisted:
        raise AssertionError(f"{package}._compat uses private zarr members not listed: {unlisted}")


@contextlib.contextmanager
def local_cluster(*upload: str | os.PathLike[str], timeout: float = 60.0) -> Iterator[Any]:
    """A ``distributed.Client`` of two single-threaded worker processes on 127.0.0.1, spawned
    (they start with nothing of the test process imported), with the modules ``upload`` (the
    files of functions or codecs the tasks need) imported on each; every step bounded by
    ``timeout`` seconds, the cluster always closed.

    Its dashboard takes a free port: ``dashboard_address=None`` still binds 8787, which a
    second test run on the machine would find taken (a warning, an error under ``-W error``).
    """
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
    """Object writes (``array[...] = cells``) as zarr makes them without this package's write
    hook: chunk by chunk through the codec's object path, each cell converted as its chunk is
    encoded. Tests compare what the columnar engine stores with what this stores."""
    from zarr import AsyncArray

    hooked = AsyncArray.__dict__["_set_selection"]
    AsyncArray._set_selection = hooked.__wrapped__  # type: ignore[method-assign]
    try:
        yield
    finally:
        AsyncArray._set_selection = hooked  # type: ignore[method-assign]
