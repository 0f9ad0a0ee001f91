"""Chunks are byte-identical to zarr's ``bytes`` data type + ``vlen-bytes`` of raw cell bytes.

Same cells, two arrays: ``ndarray`` + ``vlen-ndarray`` and zarr's variable-length bytes type +
``vlen-bytes`` holding ``cell.tobytes()``. Every stored object other than ``zarr.json`` must be
identical, with and without zstd, with and without sharding. Converting a store between the two
forms is then a rewrite of ``zarr.json`` only, which is checked in both directions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zvn_helpers import object_array, random_cell
from zarr.codecs import ZstdCodec
from zarr.dtype import VariableLengthBytes

from zarr_ndarray_dtype import NDArrayDType
from zarr_vlen_ndarray import VlenNDArrayCodec

# zarr warns that its own variable-length bytes type and codec have no Zarr v3 specification
# yet (the wording differs between releases).
pytestmark = [
    pytest.mark.plain_zarr,  # zarr's variable-length bytes arrays beside ours
    pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification"),
    pytest.mark.filterwarnings("ignore:The codec `vlen-bytes` is currently not part"),
]

CASES = [
    (NDArrayDType(dtype="float32", shape=(None, 2)), (7,), (3,), None),
    (NDArrayDType(dtype="uint64", shape=(None,)), (4, 5), (2, 3), None),
    (NDArrayDType(dtype="bool", shape=(None, 3)), (6,), (4,), None),
    (NDArrayDType(dtype="complex128", shape=(None, 2, 2)), (2, 2, 3), (1, 2, 2), None),
    (NDArrayDType(dtype="int16", shape=(None,)), (8,), (2,), (4,)),
    (NDArrayDType(dtype="float64", shape=(None, 3)), (5, 4), (2, 2), (4, 4)),
]


def _objects(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "zarr.json"
    }


def _cells(dtype: NDArrayDType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    rows = rng.integers(0, 5, size=count)
    rows[: max(1, count // 4)] = 0  # a run of empty cells: whole chunks may be all-empty
    cells = [random_cell(rng, dtype, int(r)) for r in rows]
    return object_array(cells, shape)


def _raw(cells: np.ndarray) -> np.ndarray:
    out = np.empty(cells.shape, dtype=object)
    for index in np.ndindex(cells.shape):
        out[index] = cells[index].tobytes()
    return out


def _write_pair(
    tmp_path: Path, case: tuple[Any, ...], compress: bool, seed: int = 0
) -> tuple[Path, Path, np.ndarray]:
    dtype, shape, chunks, shards = case
    compressors: Any = [ZstdCodec(level=3)] if compress else None
    cells = _cells(dtype, shape, seed)
    typed_root, raw_root = tmp_path / "typed", tmp_path / "raw"
    typed = zarr.create_array(
        zarr.storage.LocalStore(typed_root),
        shape=shape,
        chunks=chunks,
        shards=shards,
        dtype=dtype,
        serializer=VlenNDArrayCodec(),
        compressors=compressors,
    )
    raw = zarr.create_array(
        zarr.storage.LocalStore(raw_root),
        shape=shape,
        chunks=chunks,
        shards=shards,
        dtype=VariableLengthBytes(),
        compressors=compressors,
    )
    typed[...] = cells
    raw[...] = _raw(cells)
    return typed_root, raw_root, cells


@pytest.mark.parametrize("compress", [False, True], ids=["raw", "zstd"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].dtype}-{c[1]}-shards{c[3]}")
def test_chunks_identical_to_vlen_bytes(
    tmp_path: Path, case: tuple[Any, ...], compress: bool
) -> None:
    typed_root, raw_root, _ = _write_pair(tmp_path, case, compress)
    typed_objects, raw_objects = _objects(typed_root), _objects(raw_root)
    assert typed_objects  # something was written
    assert typed_objects.keys() == raw_objects.keys()
    for key, blob in typed_objects.items():
        assert blob == raw_objects[key], key


def test_all_empty_chunks_are_elided_like_vlen_bytes(tmp_path: Path) -> None:
    dtype, shape, chunks = NDArrayDType(dtype="float32", shape=(None, 2)), (6,), (2,)
    cells = object_array([np.zeros((0, 2), np.float32)] * 2 + [np.ones((1, 2), np.float32)] * 4)
    typed = zarr.create_array(
        zarr.storage.LocalStore(tmp_path / "t"), shape=shape, chunks=chunks, dtype=dtype
    )
    typed[:] = cells
    raw = zarr.create_array(
        zarr.storage.LocalStore(tmp_path / "r"),
        shape=shape,
        chunks=chunks,
        dtype=VariableLengthBytes(),
    )
    raw[:] = _raw(cells)
    assert _objects(tmp_path / "t") == _objects(tmp_path / "r")
    assert sorted(_objects(tmp_path / "t")) == ["c/1", "c/2"]


def _metadata(root: Path) -> dict[str, Any]:
    return json.loads((root / "zarr.json").read_text(encoding="utf-8"))


def _swap_serializer(meta: dict[str, Any], old: str, new: dict[str, Any]) -> None:
    """Replace the array -> bytes codec (top level or inside sharding) in place."""
    for i, codec in enumerate(meta["codecs"]):
        if codec["name"] == old:
            meta["codecs"][i] = new
        elif codec["name"] == "sharding_indexed":
            _swap_serializer(codec["configuration"], old, new)


@pytest.mark.parametrize("case", [CASES[0], CASES[5]], ids=["plain", "sharded"])
def test_metadata_only_conversion_both_ways(tmp_path: Path, case: tuple[Any, ...]) -> None:
    dtype = case[0]
    typed_root, raw_root, cells = _write_pair(tmp_path, case, compress=True, seed=3)

    # raw -> typed: rewrite zarr.json only.
    typed_meta = _metadata(typed_root)
    raw_meta = _metadata(raw_root)
    converted = dict(raw_meta)
    converted["data_type"] = dtype.to_json(zarr_format=3)
    converted["fill_value"] = ""
    _swap_serializer(converted, "vlen-bytes", VlenNDArrayCodec().to_dict())
    (raw_root / "zarr.json").write_text(json.dumps(converted), encoding="utf-8")
    back = zarr.open_array(zarr.storage.LocalStore(raw_root), mode="r")[...]
    for index in np.ndindex(cells.shape):
        assert back[index].tobytes() == cells[index].tobytes()
        assert back[index].shape == cells[index].shape

    # typed -> raw: rewrite zarr.json only.
    raw_form = dict(typed_meta)
    raw_form["data_type"] = raw_meta["data_type"]
    raw_form["fill_value"] = raw_meta["fill_value"]
    _swap_serializer(raw_form, "vlen-ndarray", {"name": "vlen-bytes", "configuration": {}})
    (typed_root / "zarr.json").write_text(json.dumps(raw_form), encoding="utf-8")
    payloads = zarr.open_array(zarr.storage.LocalStore(typed_root), mode="r")[...]
    for index in np.ndindex(cells.shape):
        assert payloads[index] == cells[index].tobytes()
