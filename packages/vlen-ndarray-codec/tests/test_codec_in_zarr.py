"""The codec inside zarr arrays: dtypes, ranks, partial and scalar writes, fills, elision."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import zarr
from _zvn_helpers import object_array, random_cell

from zarr_ndarray_dtype import ELEMENT_DTYPES, CellError, CellTypeError, NDArrayDType
from zarr_vlen_ndarray import VlenNDArrayCodec, VlenScalar, unbox

F32_2 = NDArrayDType(dtype="float32", shape=(None, 2))


def _array(dtype: NDArrayDType, shape: tuple[int, ...], chunks: tuple[int, ...], **kw: Any) -> Any:
    kw.update(shape=shape, chunks=chunks, dtype=dtype, serializer=VlenNDArrayCodec())
    return zarr.create_array(zarr.storage.MemoryStore(), **kw)


def _random_cells(dtype: NDArrayDType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cells = [random_cell(rng, dtype, int(rng.integers(0, 5))) for _ in range(math.prod(shape))]
    return object_array(cells, shape)


def _assert_cells_equal(got: np.ndarray, want: np.ndarray, dtype: NDArrayDType) -> None:
    if want.ndim == 0 and got.dtype != object:
        # zarr 3.1.0 returns the cell itself (not wrapped) for arr[...] of an F-ordered 0-d array.
        got = object_array([got], ())
    assert got.shape == want.shape
    assert got.dtype == object
    for index in np.ndindex(want.shape):
        cell = got[index]
        assert isinstance(cell, np.ndarray)
        assert cell.dtype == dtype.item_dtype
        assert cell.shape == want[index].shape
        assert cell.tobytes() == np.ascontiguousarray(want[index], dtype.item_dtype).tobytes()
        assert not cell.flags.writeable


@pytest.mark.parametrize("name", ELEMENT_DTYPES)
def test_every_element_dtype(name: str) -> None:
    dtype = NDArrayDType(dtype=name, shape=(None, 2))
    cells = _random_cells(dtype, (5,), seed=len(name))
    arr = _array(dtype, (5,), (2,), compressors=zarr.codecs.ZstdCodec(level=1))
    arr[:] = cells
    _assert_cells_equal(arr[:], cells, dtype)


@pytest.mark.parametrize(
    ("shape", "chunks"),
    [((), ()), ((5,), (2,)), ((3, 4), (2, 3)), ((2, 3, 4), (1, 2, 3))],
    ids=["rank0", "rank1", "rank2", "rank3"],
)
@pytest.mark.parametrize("order", ["C", "F"])
def test_outer_ranks_and_orders(
    shape: tuple[int, ...], chunks: tuple[int, ...], order: str
) -> None:
    dtype = NDArrayDType(dtype="int32", shape=(None, 3))
    cells = _random_cells(dtype, shape, seed=len(shape))
    arr = _array(dtype, shape, chunks, config={"order": order})
    arr[...] = cells
    _assert_cells_equal(np.asarray(arr[...]), cells, dtype)
    reopened = zarr.open_array(arr.store, mode="r")
    _assert_cells_equal(np.asarray(reopened[...]), cells, dtype)


def test_f_order_chunks_equal_c_order_chunks() -> None:
    dtype = NDArrayDType(dtype="uint16", shape=(None,))
    cells = _random_cells(dtype, (4, 6), seed=9)
    stores = []
    for order in ("C", "F"):
        arr = _array(dtype, (4, 6), (2, 3), config={"order": order})
        arr[...] = cells
        stores.append(arr.store)
    keys = ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    proto = zarr.core.buffer.default_buffer_prototype()

    async def fetch(store: Any, key: str) -> bytes:
        buf = await store.get(key, prototype=proto)
        return b"" if buf is None else buf.to_bytes()

    from zarr.core.sync import sync

    for key in keys:
        assert sync(fetch(stores[0], key)) == sync(fetch(stores[1], key)), key


def test_partial_and_scalar_writes() -> None:
    arr = _array(F32_2, (6,), (4,))
    arr[1:3] = object_array([np.ones((1, 2), np.float32), np.full((3, 2), 2, np.float32)])
    arr[4] = np.arange(4, dtype=np.float32).reshape(2, 2)
    arr[5] = [[7.0, 8.0]]  # a list cell
    arr[0] = None  # None writes the empty cell
    out = arr[:]
    assert [c.shape for c in out] == [(0, 2), (1, 2), (3, 2), (0, 2), (2, 2), (1, 2)]
    np.testing.assert_array_equal(out[4], np.arange(4, dtype=np.float32).reshape(2, 2))
    np.testing.assert_array_equal(out[5], [[7.0, 8.0]])
    # A scalar read comes wrapped in a 0-d object array, as zarr does for its own vlen types.
    scalar = arr[2]
    np.testing.assert_array_equal(unbox(scalar), np.full((3, 2), 2, np.float32))
    # Overwrite one cell of a chunk that is already stored.
    arr[1] = np.zeros((5, 2), np.float32)
    assert [c.shape for c in arr[:]] == [(0, 2), (5, 2), (3, 2), (0, 2), (2, 2), (1, 2)]


@pytest.mark.parametrize("shards", [None, (4,)])
def test_a_scalar_selection_gives_the_cell(shards: Any) -> None:
    """``arr[i]`` and ``get_basic_selection(i)`` are the cell itself, read-only as every read
    cell is; ``unbox`` leaves it as it is."""
    arr = _array(F32_2, (4, 3), (2, 2), shards=shards and (4, 2))
    cells = _random_cells(F32_2, (4, 3))
    arr[:] = cells
    for got in (arr[1, 2], arr.get_basic_selection((1, 2)), unbox(arr[1, 2])):
        assert type(got) is np.ndarray and got.dtype == np.float32
        assert got.tobytes() == cells[1, 2].tobytes() and not got.flags.writeable
    assert type(arr[1:2, 0][0]) is np.ndarray  # a slice's items are the cells themselves
    line = _array(F32_2, (4,), (2,), shards=shards)
    line[:] = _random_cells(F32_2, (4,))
    assert type(line[3]) is np.ndarray and line[3].shape[1:] == (2,)


def test_scalar_write_into_rank2_array() -> None:
    dtype = NDArrayDType(dtype="int64", shape=(None,))
    arr = _array(dtype, (3, 3), (2, 2))
    arr[1, 2] = np.array([1, 2, 3], dtype=np.int64)
    arr[0, 0] = np.array([4], dtype=np.int32)  # lossless conversion
    out = arr[...]
    assert out[1, 2].tolist() == [1, 2, 3]
    assert out[0, 0].tolist() == [4]
    assert out[2, 2].shape == (0,)


def test_unwritten_regions_read_as_immutable_empty_cells() -> None:
    arr = _array(F32_2, (5,), (2,))
    arr[0] = np.ones((1, 2), np.float32)
    out = arr[:]
    # Cell 1 shares a stored chunk with cell 0: decoded, read-only, empty.
    assert out[1].shape == (0, 2)
    assert not out[1].flags.writeable
    # Cells 2..4 lie in chunks never written: the fill cell, a plain read-only array.
    for cell in out[2:]:
        assert type(cell) is np.ndarray and not isinstance(cell, VlenScalar)
        assert cell.shape == (0, 2)
        assert cell.dtype == np.dtype("<f4")
        assert not cell.flags.writeable
        with pytest.raises(ValueError):
            cell.setflags(write=True)
    assert np.array_equal(out[3], np.zeros((0, 2), np.float32))
    # The fill value of the array handle is unchanged by reads.
    assert unbox(arr.fill_value).shape == (0, 2)


def test_non_empty_fill_value() -> None:
    fill = np.array([[1.5, -1.5]], dtype=np.float32)
    arr = _array(F32_2, (4,), (2,), fill_value=fill)
    arr[3] = np.zeros((2, 2), np.float32)
    out = arr[:]
    for cell in out[:3]:
        np.testing.assert_array_equal(cell, fill)
    reopened = zarr.open_array(arr.store, mode="r")
    np.testing.assert_array_equal(unbox(reopened[0]), fill)


def _stored_keys(arr: Any) -> list[str]:
    from zarr.core.sync import sync

    async def keys() -> list[str]:
        return [k async for k in arr.store.list()]

    return sorted(k for k in sync(keys()) if k != "zarr.json")


def test_empty_chunk_elision() -> None:
    arr = _array(F32_2, (6,), (2,))
    empty = np.zeros((0, 2), np.float32)
    arr[:] = object_array([empty, empty, np.ones((1, 2), np.float32), empty, empty, empty])
    assert _stored_keys(arr) == ["c/1"]
    arr[2:3] = object_array([empty])  # the only non-empty chunk becomes all-empty: deleted
    assert _stored_keys(arr) == []
    kept = _array(F32_2, (2,), (2,), config={"write_empty_chunks": True})
    kept[:] = object_array([empty, empty])
    assert _stored_keys(kept) == ["c/0"]
    assert [c.shape for c in kept[:]] == [(0, 2), (0, 2)]


def test_sharded_partial_writes() -> None:
    dtype = NDArrayDType(dtype="float64", shape=(None, 3))
    arr = _array(dtype, (8,), (2,), shards=(4,), compressors=zarr.codecs.ZstdCodec(level=3))
    cells = _random_cells(dtype, (8,), seed=4)
    arr[1:7] = cells[1:7]
    arr[7] = cells[7]
    out = arr[:]
    _assert_cells_equal(out[1:], cells[1:], dtype)
    assert out[0].shape == (0, 3)


def test_default_serializer_is_this_codec() -> None:
    arr = zarr.create_array(zarr.storage.MemoryStore(), shape=(2,), chunks=(2,), dtype=F32_2)
    assert arr.metadata.to_dict()["codecs"][0] == {"name": "vlen-ndarray", "configuration": {}}
    arr[0] = np.ones((2, 2), np.float32)
    assert arr[:][0].shape == (2, 2)


@pytest.mark.parametrize("shards", [None, (10, 10)], ids=["chunked", "sharded"])
def test_a_write_with_a_lossy_cell_stores_nothing_and_names_it(shards: Any) -> None:
    arr = _array(F32_2, (10, 10), (5, 5), shards=shards, compressors=zarr.codecs.ZstdCodec())
    arr[...] = _random_cells(F32_2, (10, 10), seed=2)
    before = {k: arr.store._store_dict[k].to_bytes() for k in _stored_keys(arr)}
    rng = np.random.default_rng(3)  # float64 cells, converted to float32 on write
    cells = object_array([rng.random((int(rng.integers(0, 4)), 2)) for _ in range(100)], (10, 10))
    cells[8, 9] = np.array([[3e38 * 10, 0.0]])
    with pytest.raises(CellTypeError, match=r"^cell \(8, 9\) of shape \(1, 2\) and dtype float64"):
        arr[...] = cells
    assert {k: arr.store._store_dict[k].to_bytes() for k in _stored_keys(arr)} == before
    fill = np.zeros((2, 2), np.float32)
    filled = _array(F32_2, (4,), (2,), fill_value=fill)
    filled[0] = fill  # stores nothing (elided), and reads like any other cell
    assert _stored_keys(filled) == [] and (filled[:][0] == 0).all()


def test_bad_cells_refused_on_write() -> None:
    arr = _array(F32_2, (2,), (2,))
    with pytest.raises(CellError, match="does not match pattern"):
        arr[0] = np.zeros(3, np.float32)
    int_arr = _array(NDArrayDType(dtype="uint8", shape=(None,)), (2,), (2,))
    with pytest.raises(CellTypeError, match="outside the range"):
        int_arr[0] = np.array([256])
    assert _stored_keys(arr) == []


def test_cells_of_a_read_are_views_of_one_block() -> None:
    arr = _array(F32_2, (3,), (3,))
    arr[:] = object_array([np.ones((2, 2), np.float32)] * 3)
    out = arr[:]
    bases = {id(c.base) for c in out}
    assert len(bases) == 1
    with pytest.raises(ValueError, match="read-only"):
        out[0][0, 0] = 3.0
