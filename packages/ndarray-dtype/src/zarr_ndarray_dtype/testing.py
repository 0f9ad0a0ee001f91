"""Helpers the tests of this package and of the packages built on it share (a package's sdist
holds only its own tests): README examples run as written, scripts in a fresh interpreter,
entry points, the private-zarr check, a local Dask cluster, zarr's own object writes as a
reference, and the runner of ``registry/examples/``. Imports only the standard library; zarr,
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
import warnings
from collections.abc import Iterable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

__all__ = [
    "assert_entry_point",
    "assert_printed_as_commented",
    "assert_zarr_private_only_in_compat",
    "check_invalid_vector",
    "check_valid_vector",
    "local_cluster",
    "readme_examples",
    "registry_vectors",
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


# ------------------------------------------------------------------ the registry's vectors
#
# A vector is run the way a user meets its bytes: its zarr.json (and chunk) written to a
# directory store and opened with zarr, cells read with indexing and with the columnar engine,
# cells written both ways and the stored chunk compared with the vector's. Where zarr lacks a
# codec the vector names (a package tested without its siblings), the data type's own entry
# points check what they can and the rest is skipped, saying why.


def registry_vectors(path: str | os.PathLike[str]) -> dict[str, list[Any]]:
    """``{"valid": [...], "invalid": [...]}`` pytest parameters (ids: the vectors' ids) of a
    registry vector file (registry/README.md describes the layout)."""
    import json

    import pytest

    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {
        group: [pytest.param(v, id=v["id"]) for v in doc[group]] for group in ("valid", "invalid")
    }


def _zarr_text(vector: dict[str, Any]) -> str:
    """The vector's zarr.json as text (a data type alone is put in a one-element array)."""
    import json

    if "zarr_json_text" in vector:
        return str(vector["zarr_json_text"])
    if "zarr_json" in vector:
        return json.dumps(vector["zarr_json"])
    data_type = vector.get("data_type_text") or json.dumps(vector["data_type"])
    return (
        '{"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": '
        f"{data_type}, "
        '"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}}, '
        '"chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, '
        '"fill_value": "", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}'
    )


def _codec_names(codecs: Any) -> Iterator[str]:
    for codec in codecs if isinstance(codecs, list) else ():
        if isinstance(codec, dict):
            yield str(codec.get("name"))
            yield from _codec_names((codec.get("configuration") or {}).get("codecs"))


def _missing_codecs(vector: dict[str, Any]) -> list[str]:
    """The codecs a vector's array names that this zarr does not know."""
    import json

    from zarr.registry import get_codec_class

    document = json.loads(_zarr_text(vector))
    missing = []
    for name in _codec_names(document.get("codecs")):
        try:
            get_codec_class(name)
        except Exception:
            missing.append(name)
    return missing


def _store(root: Path, vector: dict[str, Any], chunk: bool) -> Path:
    root.mkdir(parents=True)
    (root / "zarr.json").write_text(_zarr_text(vector), encoding="utf-8")
    if chunk and "chunk_hex" in vector:
        where = root / vector["chunk_key"]
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes(bytes.fromhex(vector["chunk_hex"]))
    return root


def _data_type(vector: dict[str, Any]) -> Any:
    """The vector's data type through the data type's own entry point (and its JSON)."""
    import json

    from zarr_ndarray_dtype.dtype import NDArray

    if "data_type_text" in vector:
        data = json.loads(vector["data_type_text"])
    elif "data_type" in vector:
        data = vector["data_type"]
    else:
        data = json.loads(_zarr_text(vector))["data_type"]
    return NDArray.from_json(data, zarr_format=3), data


def _same_cells(got: Any, cells: list[dict[str, Any]], what: str) -> None:
    """Cells (any iterable of arrays, C order) have the vector's shapes and bytes."""
    import numpy as np

    got = list(got)
    assert len(got) == len(cells), f"{what}: {len(got)} cells, the vector has {len(cells)}"
    for i, (cell, want) in enumerate(zip(got, cells, strict=True)):
        arr = np.asarray(cell)
        assert list(arr.shape) == want["shape"], f"{what}: cell {i} has shape {arr.shape}"
        assert np.ascontiguousarray(arr).tobytes().hex() == want["hex"], f"{what}: cell {i}"


def _cells_in(vector: dict[str, Any], dtype: Any, key: str = "cells") -> Any:
    """The vector's cells (``None`` for a missing one) as an object array of the array's shape."""
    import numpy as np

    shape = tuple(vector["zarr_json"]["shape"])
    out = np.empty(len(vector[key]), dtype=object)
    for i, cell in enumerate(vector[key]):
        if cell is not None:
            raw = np.frombuffer(bytes.fromhex(cell["hex"]), dtype=dtype.item_dtype)
            out[i] = raw.reshape(cell["shape"])
    return out.reshape(shape)


def _stored(root: Path, vector: dict[str, Any], what: str) -> None:
    """The chunk a write stored is the vector's (or absent, where the vector allows it)."""
    where = root / vector["chunk_key"]
    if not where.exists():
        assert vector.get("may_omit", False), f"{what}: no chunk stored, the vector needs one"
        return
    assert where.read_bytes().hex() == vector["chunk_hex"], f"{what}: stored bytes differ"


def check_valid_vector(vector: dict[str, Any], tmp: str | os.PathLike[str]) -> None:
    """Run a valid vector (``tmp``: an empty directory); :class:`AssertionError` if this
    implementation disagrees with it."""
    import numpy as np
    import pytest
    import zarr

    from zarr_ndarray_dtype import read_columnar, write_columnar
    from zarr_ndarray_dtype.cells import unbox

    dtype, data = _data_type(vector)
    if "zarr_json" not in vector and "zarr_json_text" not in vector:
        assert dtype.to_json(zarr_format=3) == vector.get("canonical", data)
        assert zarr.dtype.data_type_registry.match_json(data, zarr_format=3) == dtype
        return
    fill = vector.get("fill_element")
    missing = _missing_codecs(vector)
    if missing:
        if fill is not None:
            cell = unbox(dtype.from_json_scalar(vector["zarr_json"]["fill_value"], zarr_format=3))
            _same_cells([cell], [fill], "fill value")
        pytest.skip(f"zarr {zarr.__version__} knows no codec {missing}: checked the data type only")
    root = Path(tmp)
    array = zarr.open_array(_store(root / "read", vector, chunk=True), mode="r")
    if fill is not None:
        _same_cells([unbox(array[(0,) * array.ndim])], [fill], "fill element")
    if "chunk_hex" not in vector:
        return
    read = np.asarray(array[...], dtype=object)
    _same_cells(read.ravel(order="C"), vector["cells"], "cells read by indexing")
    columns = read_columnar(array)
    offsets = columns.offsets
    flat = [
        columns.values[offsets[i] : offsets[i + 1]].reshape(columns.shapes[i])
        for i in range(len(vector["cells"]))
    ]
    _same_cells(flat, vector["cells"], "cells read by read_columnar")
    written = "cells_written" if "cells_written" in vector else "cells"
    target = zarr.open_array(_store(root / "object", vector, chunk=False), mode="r+")
    target[...] = _cells_in(vector, dtype, written)
    _stored(root / "object", vector, "cells written by indexing")
    if written == "cells":  # the engine writes columns, which have no missing cells
        target = zarr.open_array(_store(root / "columnar", vector, chunk=False), mode="r+")
        write_columnar(target, columns.values, columns.offsets, shapes=columns.shapes)
        _stored(root / "columnar", vector, "cells written by write_columnar")


def check_invalid_vector(vector: dict[str, Any], tmp: str | os.PathLike[str]) -> None:
    """Run an invalid vector: every entry point refuses it with a ``ValueError`` naming the
    vector's rule (``tmp``: an empty directory)."""
    import pytest
    import zarr

    from zarr_ndarray_dtype import read_columnar

    rule = vector["rule"]

    def data_type_and_fill() -> None:  # the data type's own entry points
        dtype, _ = _data_type(vector)
        dtype.from_json_scalar(vector["zarr_json"]["fill_value"], zarr_format=3)

    def open_array() -> None:
        with warnings.catch_warnings():  # zarr 3.1.x: vlen-bytes and vlen-utf8 are no v3 codecs
            warnings.filterwarnings("ignore", "The codec .* is currently not part", UserWarning)
            zarr.open_array(root, mode="r")

    if rule.startswith(("SPEC 1.3/", "SPEC 1.5/")):
        with pytest.raises(ValueError, match=re.escape(rule)):
            data_type_and_fill()
    missing = _missing_codecs(vector)
    if missing:
        pytest.skip(f"zarr {zarr.__version__} knows no codec {missing}")
    root = _store(Path(tmp) / "store", vector, chunk=True)
    if "chunk_hex" not in vector:
        with pytest.raises(ValueError, match=re.escape(rule)):
            open_array()
        return
    array = zarr.open_array(root, mode="r")
    with pytest.raises(ValueError, match=re.escape(rule)):
        array[...]
    with pytest.raises(ValueError, match=re.escape(rule)):
        read_columnar(array)
