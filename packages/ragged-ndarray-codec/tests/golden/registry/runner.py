"""The vector runner: the language-neutral vectors of ``registry/examples/`` run against the
Python packages as a user meets them (stores opened through zarr, cells read and written both
ways). zarr, numpy and pytest are imported only when a vector runs.

This file is registry/runner.py; registry/examples/generate.py copies it beside the vectors in
each zarr package's tests/golden/registry/ (its --check fails when a copy differs): edit the
original. The package tests load the copy (``load_runner`` of their test support module).
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["check_invalid_vector", "check_valid_vector", "registry_vectors"]


# A vector is run the way a user meets its bytes: its zarr.json (and chunk) written to a
# directory store and opened with zarr, cells read with indexing and with the columnar engine,
# cells written both ways and the stored chunk compared with the vector's. Where zarr lacks a
# codec the vector names (a package tested without its siblings), the data type's own entry
# points check what they can and the rest is skipped, saying why.


def registry_vectors(path: str | os.PathLike[str]) -> dict[str, list[Any]]:
    """``{"valid": [...], "invalid": [...]}`` pytest parameters (ids: the vectors' ids) of a
    registry vector file (registry/README.md describes the layout)."""

    import pytest

    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {
        group: [pytest.param(v, id=v["id"]) for v in doc[group]] for group in ("valid", "invalid")
    }


def _zarr_text(vector: dict[str, Any]) -> str:
    """The vector's zarr.json as text (a data type alone is put in a one-element array)."""

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

    from zarr_ndarray_dtype import NDArrayDType

    if "data_type_text" in vector:
        data = json.loads(vector["data_type_text"])
    elif "data_type" in vector:
        data = vector["data_type"]
    else:
        data = json.loads(_zarr_text(vector))["data_type"]
    return NDArrayDType.from_json(data, zarr_format=3), data


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

    from zarr_ndarray_dtype import read_columnar, unbox, write_columnar

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
        with warnings.catch_warnings():  # zarr 3.1.x warns of codecs outside the v3 core spec
            warnings.filterwarnings("ignore", "The codec .* is currently not part", UserWarning)
            warnings.filterwarnings("ignore", "Numcodecs codecs are not in the Zarr", UserWarning)
            zarr.open_array(root, mode="r")

    if rule.startswith(("SPEC 1.3/", "SPEC 1.5/")):
        with pytest.raises(ValueError, match=re.escape(rule)):
            data_type_and_fill()
    missing = _missing_codecs(vector)
    if missing:
        pytest.skip(f"zarr {zarr.__version__} knows no codec {missing}")
    if rule == "SPEC 1.6/3" and zarr.codecs.BytesCodec.from_dict({"name": "bytes"}).endian:
        pytest.skip(f"zarr {zarr.__version__} reads a 'bytes' codec without endian as little")
    root = _store(Path(tmp) / "store", vector, chunk=True)
    if "chunk_hex" not in vector:
        with pytest.raises(Exception) as refused:  # zarr's words, ours chained as the cause
            open_array()
        chain: list[BaseException] = [refused.value]
        while chain[-1].__cause__ is not None or chain[-1].__context__ is not None:
            chain.append(chain[-1].__cause__ or chain[-1].__context__)  # type: ignore[arg-type]
        # zarr refuses a data type or codec object of the wrong form in its own words first
        ours = any(isinstance(e, ValueError) and rule in str(e) for e in chain)
        assert ours or rule.startswith(("SPEC 1.3/", "SPEC 2.2/", "SPEC 5.1/")), chain
        return
    array = zarr.open_array(root, mode="r")
    with pytest.raises(ValueError, match=re.escape(rule)):
        array[...]
    with pytest.raises(ValueError, match=re.escape(rule)):
        read_columnar(array)
