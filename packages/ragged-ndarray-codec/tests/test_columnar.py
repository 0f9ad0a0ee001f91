"""Columnar read/write: equal to zarr's object path, byte for byte, N-d arrays and selections."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import zarr
from _zrn_helpers import object_array, random_cell, random_shape
from _zrn_support import zarr_own_writes
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.core.sync import sync

from zarr_ndarray_dtype import CellError, NDArrayDType
from zarr_ragged_ndarray import Columnar, RaggedNDArrayCodec, read_columnar, write_columnar
from zarr_ragged_ndarray.layout import RaggedLayoutError

F32_NN = NDArrayDType(dtype="float32", shape=(None, None))


def _cells(dtype: NDArrayDType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    return object_array(
        [random_cell(rng, dtype, random_shape(rng, dtype)) for _ in range(count)], shape
    )


def _array(dtype: NDArrayDType, shape: Any, chunks: Any, sharded: bool = False, **kw: Any) -> Any:
    if sharded:  # shards of `chunks`, inner chunks of half that
        kw["shards"] = chunks
        chunks = tuple(max(1, c // 2) for c in chunks)
    kw.setdefault("compressors", zarr.codecs.ZstdCodec(level=1))
    return zarr.create_array(
        zarr.storage.MemoryStore(), shape=shape, chunks=chunks, dtype=dtype,
        serializer=RaggedNDArrayCodec(), **kw,
    )  # fmt: skip


def _columns(cells: np.ndarray, dtype: NDArrayDType) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, offsets, shapes)`` of ``cells`` in the layout read_columnar gives."""
    flat = [dtype.coerce_cell(c) for c in cells.reshape(-1)]
    shapes = np.array([c.shape for c in flat], np.int64).reshape(len(flat), dtype.pattern.ndim)
    sizes = np.array([c.size for c in flat], dtype=np.int64)
    values = (
        np.concatenate([c.reshape(-1) for c in flat]) if flat else np.empty(0, dtype.item_dtype)
    )
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    if dtype.pattern.is_leading_variable:  # rows of the fixed extents, row offsets
        values = values.reshape(-1, *dtype.shape[1:])
        offsets //= dtype.pattern.fixed_items
    return values.astype(dtype.item_dtype), offsets, shapes


def _write(arr: Any, cells: np.ndarray, dtype: NDArrayDType, selection: Any = ...) -> None:
    values, offsets, shapes = _columns(cells, dtype)
    write_columnar(arr, values, offsets, selection, shapes=shapes)


def _store_bytes(arr: Any) -> dict[str, bytes]:
    async def dump() -> dict[str, bytes]:
        proto = zarr.core.buffer.default_buffer_prototype()
        out = {}
        async for key in arr.store.list():
            buf = await arr.store.get(key, prototype=proto)
            out[key] = buf.to_bytes()
        return out

    return sync(dump())


def _assert_matches(col: Columnar, cells: np.ndarray, dtype: NDArrayDType) -> None:
    values, offsets, shapes = _columns(cells, dtype)
    assert col.shape == cells.shape and col.values.shape == values.shape
    assert col.values.dtype == dtype.item_dtype
    assert col.values.tobytes() == values.tobytes()
    assert col.shapes.tolist() == shapes.tolist()
    assert col.offsets.tolist() == offsets.tolist()


SELECTIONS = [
    ...,
    (slice(1, 4), slice(2, 7)),
    (2, slice(None)),
    (slice(None), 5),
    (3, 4),
    (slice(2, 2), slice(None)),
]


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("selection", SELECTIONS, ids=str)
def test_read_equals_object_path(selection: Any, sharded: bool) -> None:
    dtype = NDArrayDType(dtype="int16", shape=(2, None, None))
    arr = _array(dtype, (5, 9), (2, 4), sharded=sharded)
    cells = _cells(dtype, (5, 9), seed=3)
    arr[1:, :8] = cells[1:, :8]  # some chunks never written: fill cells
    col = read_columnar(arr, selection)
    got = arr[selection if selection is not ... else slice(None)]
    scalar = isinstance(selection, tuple) and all(isinstance(i, int) for i in selection)
    want = object_array([got], ()) if scalar else np.asarray(got, dtype=object)  # the cell
    _assert_matches(col, want.reshape(col.shape), dtype)


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("selection", SELECTIONS, ids=str)
def test_write_is_byte_identical_to_object_path(selection: Any, sharded: bool) -> None:
    dtype = NDArrayDType(dtype="float32", shape=(None, 3, None))
    base = _cells(dtype, (5, 9), seed=1)
    direct = _array(dtype, (5, 9), (2, 4), sharded=sharded)
    objects = _array(dtype, (5, 9), (2, 4), sharded=sharded)
    direct[:2] = base[:2]
    with zarr_own_writes():
        objects[:2] = base[:2]
    shape = np.zeros((5, 9))[selection].shape
    new = _cells(dtype, shape, seed=7)
    _write(direct, new, dtype, selection)
    with zarr_own_writes():
        objects[selection] = new
    assert _store_bytes(direct) == _store_bytes(objects)


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("write_empty_chunks", [False, True])
def test_sharded_writes_are_direct_and_byte_identical(
    location: str, write_empty_chunks: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (5, 9) cells, shards of (4, 6), inner chunks of (2, 3): 2 x 2 inner chunks per shard,
    # laid out in Morton order; edge shards hang over the array's end.
    dtype = NDArrayDType(dtype="int16", shape=(None, 2, None))
    kw = {
        "shards": {"shape": (4, 6), "index_location": location},
        "config": {"write_empty_chunks": write_empty_chunks},
    }
    direct = _array(dtype, (5, 9), (2, 3), **kw)
    objects = _array(dtype, (5, 9), (2, 3), **kw)
    empty = np.zeros((0, 2, 0), np.int16)  # the fill cell
    writes = [
        ((), _cells(dtype, (5, 9), seed=2)),
        ((slice(1, 4), slice(2, 8)), _cells(dtype, (3, 6), seed=3)),  # inner chunks in part
        ((slice(0, 2), slice(0, 3)), object_array([empty] * 6, (2, 3))),  # one inner chunk: fill
        ((slice(4, 5), ...), object_array([empty] * 9, (1, 9))),  # the edge row becomes fill
    ]
    for selection, cells in writes:
        with zarr_own_writes():
            objects[selection] = cells
        with monkeypatch.context() as patch:  # no cell objects: the codec's object path fails
            patch.setattr(RaggedNDArrayCodec, "encode_chunk", _no_object_path)
            patch.setattr(RaggedNDArrayCodec, "decode_chunk", _no_object_path)
            _write(direct, cells, dtype, selection)
        assert _store_bytes(direct) == _store_bytes(objects), f"after writing {selection}"


def _no_object_path(*args: Any) -> None:
    pytest.fail("a sharded write made cell objects (the codec's object path)")


def test_elision_and_fill_value() -> None:
    dtype = NDArrayDType(dtype="int8", shape=(2, None))
    fill = np.array([[1], [2]], np.int8)
    direct = _array(dtype, (6,), (2,), fill_value=fill)
    objects = _array(dtype, (6,), (2,), fill_value=fill)
    cells = object_array([fill, fill, fill, np.zeros((2, 0), np.int8), fill, fill])
    _write(direct, cells, dtype)
    with zarr_own_writes():
        objects[:] = cells
    assert _store_bytes(direct) == _store_bytes(objects)
    assert sorted(_store_bytes(direct)) == ["c/1", "zarr.json"]
    col = read_columnar(direct)
    _assert_matches(col, cells, dtype)


def test_round_trip_every_dtype_2d() -> None:
    for name in ("bool", "uint8", "float64", "complex128"):
        dtype = NDArrayDType(dtype=name, shape=(None, None))
        arr = _array(dtype, (4, 5), (3, 2))
        cells = _cells(dtype, (4, 5), seed=len(name))
        _write(arr, cells, dtype)
        _assert_matches(read_columnar(arr), cells, dtype)
        got = arr[...]
        for a, b in zip(got.reshape(-1), cells.reshape(-1), strict=True):
            assert a.tobytes() == np.asarray(b).tobytes()


@settings(max_examples=40)
@given(st.data())
def test_random_boxes(data: st.DataObject) -> None:
    shape = (data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6)))
    chunks = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    a0 = data.draw(st.integers(0, shape[0] - 1))
    b0 = data.draw(st.integers(a0, shape[0]))
    a1 = data.draw(st.integers(0, shape[1] - 1))
    b1 = data.draw(st.integers(a1, shape[1]))
    selection = (slice(a0, b0), slice(a1, b1))
    arr = _array(F32_NN, shape, chunks)
    mirror = _array(F32_NN, shape, chunks)
    base = _cells(F32_NN, shape, seed=data.draw(st.integers(0, 99)))
    arr[...] = base
    mirror[...] = base
    new = _cells(F32_NN, (b0 - a0, b1 - a1), seed=5)
    _write(arr, new, F32_NN, selection)
    mirror[selection] = new
    assert _store_bytes(arr) == _store_bytes(mirror)
    _assert_matches(read_columnar(arr, selection), new, F32_NN)


def test_chain_with_array_to_array_codec() -> None:
    arr, mirror = (
        zarr.create_array(
            zarr.storage.MemoryStore(),
            shape=(3, 2),
            chunks=(2, 2),
            dtype=F32_NN,
            serializer=RaggedNDArrayCodec(),
            filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
        )
        for _ in range(2)
    )
    cells = _cells(F32_NN, (3, 2), seed=2)
    _write(arr, cells, F32_NN)
    mirror[...] = cells
    assert _store_bytes(arr) == _store_bytes(mirror)
    _assert_matches(read_columnar(arr), cells, F32_NN)


def test_input_checks() -> None:
    dtype = NDArrayDType(dtype="uint8", shape=(2, None))
    arr = _array(dtype, (2,), (2,))
    values = np.arange(4, dtype=np.uint8)
    good_shapes = np.array([[2, 1], [2, 1]])
    with pytest.raises(ValueError, match="offsets must have 3 entries"):
        write_columnar(arr, values, np.array([0, 4]), shapes=good_shapes)
    with pytest.raises(ValueError, match="cell 0 has shape"):
        write_columnar(arr, values, np.array([0, 1, 4]), shapes=good_shapes)
    with pytest.raises(CellError, match="fixed extents"):
        write_columnar(arr, values, np.array([0, 2, 4]), shapes=np.array([[1, 2], [2, 1]]))
    with pytest.raises(CellError, match="outside the range"):
        write_columnar(arr, values.astype(int) + 300, np.array([0, 2, 4]), shapes=good_shapes)
    with pytest.raises(ValueError, match="step 1"):
        read_columnar(arr, slice(None, None, 2))
    with pytest.raises(IndexError, match="out of bounds"):
        read_columnar(arr, 5)
    assert sorted(_store_bytes(arr)) == ["zarr.json"]


def test_corrupt_chunk_is_named() -> None:
    arr = _array(F32_NN, (2,), (2,), compressors=None)
    arr[0] = np.ones((1, 1), np.float32)
    sync(arr.store.set("c/0", zarr.core.buffer.cpu.Buffer.from_bytes(b"\x02\x00\x00")))
    with pytest.raises(RaggedLayoutError, match="short header"):
        read_columnar(arr)


def test_f_order_array_writes_the_same_chunks() -> None:
    cells = _cells(F32_NN, (4, 6), seed=11)
    direct = _array(F32_NN, (4, 6), (3, 4), config={"order": "F"})
    objects = _array(F32_NN, (4, 6), (3, 4))
    _write(direct, cells, F32_NN)
    with zarr_own_writes():
        objects[...] = cells
    assert _store_bytes(direct) == _store_bytes(objects)  # order is not stored metadata
    _assert_matches(read_columnar(direct, (slice(1, 4), slice(2, 6))), cells[1:4, 2:6], F32_NN)


def test_corrupt_shard_index_is_named() -> None:
    from zarr_ndarray_dtype.errors import StoredChunkError

    arr = _array(F32_NN, (4,), (4,), sharded=True)
    arr[:] = _cells(F32_NN, (4,), seed=1)
    blob = _store_bytes(arr)["c/0"]
    sync(arr.store.set("c/0", zarr.core.buffer.cpu.Buffer.from_bytes(blob[:10])))
    with pytest.raises(
        StoredChunkError, match="the index of the stored shard 'c/0' does not decode"
    ):
        read_columnar(arr)


@pytest.mark.parametrize(
    "filters", [None, [zarr.codecs.TransposeCodec(order=())]], ids=["direct", "object-path"]
)
def test_rank0_array(filters: Any) -> None:
    arr = zarr.create_array(
        zarr.storage.MemoryStore(), shape=(), dtype=F32_NN, serializer=RaggedNDArrayCodec(),
        filters=filters,
    )  # fmt: skip
    assert read_columnar(arr).shapes.tolist() == [[0, 0]]
    write_columnar(arr, np.arange(6, dtype=np.float32), [0, 6], shapes=[[2, 3]])
    col = read_columnar(arr)
    assert col.shape == ()
    assert col.values.tolist() == list(range(6))
    assert col.shapes.tolist() == [[2, 3]]


def test_huge_shapes_are_refused_without_overflow() -> None:
    arr = _array(F32_NN, (1,), (1,))
    huge = np.array([[2**32 - 1, 2**32 - 1]])
    with pytest.raises(ValueError, match="over 0 items"):
        write_columnar(arr, np.zeros(0, np.float32), [0, 0], shapes=huge)
    with pytest.raises(ValueError, match="extents must be 0"):
        write_columnar(arr, np.zeros(0, np.float32), [0, 0], shapes=huge * 2)


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("nd", [False, True], ids=["1-d", "2-d"])
def test_edge_chunks_after_a_shrinking_resize_follow_zarr(sharded: bool, nd: bool) -> None:
    # Cells past the end of an edge chunk survive a shrinking resize; zarr drops or keeps them
    # (kept inside a shard) and the direct write must agree. Sharded: inner chunks of half.
    dtype = NDArrayDType(dtype="int16", shape=(None, None))
    shape, chunks, smaller, box = (
        ((2, 8), (2, 8), (2, 6), (slice(0, 2), slice(4, 6)))
        if nd
        else ((8,), (8,), (6,), (slice(4, 6),))
    )
    if not sharded:
        chunks = tuple(max(1, c // 2) for c in chunks)
    direct = _array(dtype, shape, chunks, sharded=sharded)
    objects = _array(dtype, shape, chunks, sharded=sharded)
    for arr in (direct, objects):
        arr[...] = _cells(dtype, shape, seed=4)
        arr.resize(smaller)
    new = _cells(dtype, (2, 2) if nd else (2,), seed=5)
    with zarr_own_writes():
        objects[box] = new
    _write(direct, new, dtype, box)
    assert _store_bytes(direct) == _store_bytes(objects)


def test_a_corrupt_chunk_the_write_keeps_cells_of_stops_it_before_anything_is_stored() -> None:
    # 20 chunks; the write covers 19 whole (more than one batch) before the corrupt last one.
    arr = _array(F32_NN, (80,), (4,), compressors=None)
    arr[...] = _cells(F32_NN, (80,), seed=6)
    store = arr.store._store_dict
    raw = bytearray(store["c/19"].to_bytes())
    raw[0:4] = (99).to_bytes(4, "little")  # chunk 19 claims 99 elements, not 4
    store["c/19"] = store["c/19"].from_bytes(bytes(raw))
    before = _store_bytes(arr)
    with pytest.raises(RaggedLayoutError):
        _write(arr, _cells(F32_NN, (78,), seed=7), F32_NN, slice(0, 78))
    assert _store_bytes(arr) == before
