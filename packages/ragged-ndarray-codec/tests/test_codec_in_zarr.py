"""The codec inside zarr arrays: patterns, dtypes, ranks, orders, fills, elision, sharding."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import zarr
from _zrn_helpers import assert_cells_equal, object_array, random_cell, random_shape

from zarr_ndarray_dtype import ELEMENT_DTYPES, CellError, NDArrayDType, unbox
from zarr_ndarray_dtype.dtype import _FillCell
from zarr_ragged_ndarray import RaggedNDArrayCodec

F32_NN = NDArrayDType(dtype="float32", shape=(None, None))
PATTERNS = [(None,), (None, 2), (2, None), (None, None), (None, 3, None), (2, None, None)]


def _array(dtype: NDArrayDType, shape: tuple[int, ...], chunks: tuple[int, ...], **kw: Any) -> Any:
    kw.update(shape=shape, chunks=chunks, dtype=dtype, serializer=RaggedNDArrayCodec())
    return zarr.create_array(zarr.storage.MemoryStore(), **kw)


def _random_cells(dtype: NDArrayDType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cells = [random_cell(rng, dtype, random_shape(rng, dtype)) for _ in range(math.prod(shape))]
    return object_array(cells, shape)


def _read(arr: Any) -> np.ndarray:
    got = arr[...]
    if arr.ndim == 0 and getattr(got, "dtype", None) != np.dtype(object):
        # zarr 3.1.0 returns the cell itself (not wrapped) for arr[...] of an F-ordered 0-d array.
        got = object_array([got], ())
    return np.asarray(got)


def _stored_keys(arr: Any) -> list[str]:
    from zarr.core.sync import sync

    async def keys() -> list[str]:
        return [k async for k in arr.store.list()]

    return sorted(k for k in sync(keys()) if k != "zarr.json")


@pytest.mark.parametrize("name", ELEMENT_DTYPES)
def test_every_element_dtype(name: str) -> None:
    dtype = NDArrayDType(dtype=name, shape=(None, 3, None))
    cells = _random_cells(dtype, (5,), seed=len(name))
    arr = _array(dtype, (5,), (2,), compressors=zarr.codecs.ZstdCodec(level=1))
    arr[:] = cells
    assert_cells_equal(arr[:], cells, dtype)


@pytest.mark.parametrize("pattern", PATTERNS, ids=str)
@pytest.mark.parametrize(
    ("shape", "chunks"),
    [((), ()), ((5,), (2,)), ((3, 4), (2, 3))],
    ids=["rank0", "rank1", "rank2"],
)
@pytest.mark.parametrize("order", ["C", "F"])
def test_patterns_ranks_orders(
    pattern: tuple[int | None, ...], shape: tuple[int, ...], chunks: tuple[int, ...], order: str
) -> None:
    dtype = NDArrayDType(dtype="int32", shape=pattern)
    cells = _random_cells(dtype, shape, seed=len(shape) + len(pattern))
    arr = _array(dtype, shape, chunks, config={"order": order})
    arr[...] = cells
    assert_cells_equal(_read(arr), cells, dtype)
    reopened = zarr.open_array(arr.store, mode="r")
    assert reopened.metadata.to_dict()["codecs"][0] == {
        "name": "ragged-ndarray",
        "configuration": {},
    }
    assert_cells_equal(_read(reopened), cells, dtype)


def test_f_order_chunks_equal_c_order_chunks() -> None:
    cells = _random_cells(F32_NN, (4, 6), seed=9)
    stores = []
    for order in ("C", "F"):
        arr = _array(F32_NN, (4, 6), (2, 3), config={"order": order})
        arr[...] = cells
        stores.append(arr.store)
    from zarr.core.sync import sync

    proto = zarr.core.buffer.default_buffer_prototype()

    async def fetch(store: Any, key: str) -> bytes:
        buf = await store.get(key, prototype=proto)
        return b"" if buf is None else buf.to_bytes()

    for key in ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]:
        assert sync(fetch(stores[0], key)) == sync(fetch(stores[1], key)), key


def test_partial_scalar_and_none_writes() -> None:
    arr = _array(F32_NN, (6,), (4,))
    arr[1:3] = object_array([np.ones((1, 2), np.float32), np.full((3, 1), 2, np.float32)])
    arr[4] = np.arange(6, dtype=np.float32).reshape(2, 3)
    arr[5] = [[7.0], [8.0]]
    arr[0] = None
    out = arr[:]
    assert [c.shape for c in out] == [(0, 0), (1, 2), (3, 1), (0, 0), (2, 3), (2, 1)]
    np.testing.assert_array_equal(unbox(arr[4]), np.arange(6).reshape(2, 3))
    arr[1] = np.zeros((5, 4), np.float32)
    assert [c.shape for c in arr[:]] == [(0, 0), (5, 4), (3, 1), (0, 0), (2, 3), (2, 1)]


def test_unwritten_regions_read_as_immutable_fill_cells() -> None:
    arr = _array(F32_NN, (5,), (2,))
    arr[0] = np.ones((1, 2), np.float32)
    out = arr[:]
    assert out[1].shape == (0, 0)
    assert not out[1].flags.writeable
    for cell in out[2:]:
        assert type(cell) is np.ndarray and not isinstance(cell, _FillCell)
        assert cell.shape == (0, 0) and not cell.flags.writeable


def test_non_empty_fill_value_and_none() -> None:
    dtype = NDArrayDType(dtype="int16", shape=(2, None))
    fill = np.array([[1], [2]], dtype=np.int16)
    arr = _array(dtype, (4,), (2,), fill_value=fill)
    arr[3] = np.zeros((2, 3), np.int16)
    arr[2] = None  # None is the fill element
    out = arr[:]
    for cell in out[:3]:
        np.testing.assert_array_equal(cell, fill)
    assert _stored_keys(arr) == ["c/1"]
    np.testing.assert_array_equal(unbox(zarr.open_array(arr.store, mode="r")[0]), fill)


def test_empty_chunk_elision() -> None:
    arr = _array(F32_NN, (6,), (2,))
    empty = np.zeros((0, 0), np.float32)
    arr[:] = object_array([empty, empty, np.ones((1, 2), np.float32), empty, empty, empty])
    assert _stored_keys(arr) == ["c/1"]
    arr[2:3] = object_array([np.zeros((0, 0), np.float32)])
    assert _stored_keys(arr) == []
    kept = _array(F32_NN, (2,), (2,), config={"write_empty_chunks": True})
    kept[:] = object_array([empty, empty])
    assert _stored_keys(kept) == ["c/0"]


def sharded_array(dtype: NDArrayDType, index_location: str) -> Any:
    """(4, 8) cells in (4, 4) shards of (2, 2) inner chunks, zstd inside, index at either end."""
    sharding = zarr.codecs.ShardingCodec(
        chunk_shape=(2, 2),
        codecs=[RaggedNDArrayCodec(), zarr.codecs.ZstdCodec(level=3)],
        index_location=index_location,
    )
    return zarr.create_array(
        zarr.storage.MemoryStore(), shape=(4, 8), chunks=(4, 4), dtype=dtype, serializer=sharding
    )


# zarr >= 3.2 warns that a sharding serializer disables partial reads; it is what we test here.
@pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec")
@pytest.mark.parametrize("index_location", ["start", "end"])
def test_sharded_with_zstd(index_location: str) -> None:
    dtype = NDArrayDType(dtype="float64", shape=(None, 3, None))
    arr = sharded_array(dtype, index_location)
    codecs = arr.metadata.to_dict()["codecs"]
    assert codecs[0]["configuration"]["index_location"] == index_location
    cells = _random_cells(dtype, (4, 8), seed=4)
    arr[1:, 1:7] = cells[1:, 1:7]
    arr[0, 7] = cells[0, 7]
    out = arr[...]
    assert_cells_equal(out[1:, 1:7], cells[1:, 1:7], dtype)
    assert out[0, 0].shape == (0, 3, 0)
    assert out[0, 7].tobytes() == cells[0, 7].tobytes()


def test_bad_cells_refused_on_write() -> None:
    arr = _array(NDArrayDType(dtype="float32", shape=(2, None)), (2,), (2,))
    with pytest.raises(CellError, match="does not match pattern"):
        arr[0] = np.zeros((3, 1), np.float32)
    assert _stored_keys(arr) == []


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
def test_a_write_with_a_lossy_cell_stores_nothing_and_names_it(sharded: bool) -> None:
    grid: dict[str, Any] = {"shards": (10, 10)} if sharded else {}
    arr = _array(F32_NN, (10, 10), (5, 5), **grid)
    cells = np.empty((10, 10), dtype=object)
    for index in np.ndindex(10, 10):
        cells[index] = np.full((1, 2), 1.5)
    cells[8, 9] = np.full((2, 1), np.nan)
    int_arr = _array(NDArrayDType(dtype="int32", shape=(None, None)), (10, 10), (5, 5), **grid)
    with pytest.raises(
        CellError, match=r"^cell \(0, 0\) of shape \(1, 2\) and dtype float64 holds 1.5"
    ):
        int_arr[...] = cells
    cells[0, 0] = np.ones((1, 1), np.int64)
    with pytest.raises(CellError, match=r"^cell \(0, 1\) of shape \(1, 2\)"):
        int_arr[...] = cells
    assert _stored_keys(int_arr) == []
    arr[...] = cells  # NaN is a float32 value: stored
    assert np.isnan(arr[8, 9:][0]).all()


def test_create_array_refuses_fixed_patterns() -> None:
    with pytest.raises(ValueError, match="at least one variable dimension"):
        _array(NDArrayDType(dtype="float32", shape=(2, 3)), (2,), (2,))
