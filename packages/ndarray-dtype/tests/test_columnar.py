"""Tests for zarr_ndarray_dtype.columnar, the one columnar engine, driven by a toy codec.

The engine is generic over the codec (its block codec), so these tests use the toy codec of
``ndarray_dtype_testing`` and compare every stored object with what zarr's own object path
leaves, across ranks, shard grids, index placement, inner chunk orders, elision, codecs, array
-> array codecs and shrinking resizes; reads must equal zarr's object reads.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import numpy as np
import pytest
import zarr
from _zdt_support import zarr_own_writes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ndarray_dtype_testing import RequestLog, ToyCodec
from packaging.version import Version
from zarr.abc.codec import BytesBytesCodec
from zarr.codecs import Crc32cCodec, ShardingCodec, TransposeCodec, ZstdCodec

from zarr_ndarray_dtype import Columnar, _store, read_columnar, write_columnar
from zarr_ndarray_dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype import _engine as engine
from zarr_ndarray_dtype.errors import StoredChunkError
from zarr_ndarray_dtype.xarray import XARRAY_MIN_VERSION

ORDERS = ("morton", "lexicographic", "colexicographic", "unordered")
HAS_WRITE_ORDER = "subchunk_write_order" in ShardingCodec.__dataclass_fields__  # zarr >= 3.3.0
PATTERNS = [(None,), (None, 2), (None, 2, 3), (2, None), (None, None), (3, None, 2)]


def _create(store: Any, dtype: NDArray, shape: Any, chunks: Any, shards: Any, **kw: Any) -> Any:
    order = kw.pop("order", "morton")
    array = zarr.create_array(
        store, shape=shape, chunks=chunks or "auto", shards=shards, dtype=dtype,
        serializer=ToyCodec(), **kw,
    )  # fmt: skip
    if order != "morton":  # a per-instance setting, not metadata: set it on the open array
        object.__setattr__(array.metadata.codecs[0], "subchunk_write_order", order)
    return array


def _cells(
    rng: np.random.Generator, dtype: NDArray, extents: tuple[int, ...], empty: float = 0.5
) -> np.ndarray:
    """Random cells, about the share ``empty`` of them the (empty) fill cell."""
    out = np.empty(extents, dtype=object)
    for index in np.ndindex(*extents):
        shape = tuple(
            (int(rng.integers(1, 3)) if rng.random() >= empty else 0) if d is None else d
            for d in dtype.shape
        )
        out[index] = rng.integers(-9, 9, shape).astype(dtype.item_dtype)
    return out


def _write(array: Any, cells: np.ndarray, selection: Any = ...) -> None:
    """``write_columnar`` of ``cells`` as flat values, item offsets and their shapes."""
    flat = list(cells.reshape(-1))
    shapes = np.array([c.shape for c in flat], np.int64).reshape(len(flat), -1)
    sizes = np.array([c.size for c in flat], np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = np.concatenate([c.reshape(-1) for c in flat]) if flat else np.zeros(0)
    write_columnar(array, values, offsets, selection, shapes=shapes)


def _stored(store: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in store.items()}


def _assert_reads_equal(col: Columnar, cells: Any) -> None:
    """The one rule of Columnar holds, in the layout of the pattern."""
    flat = np.asarray(cells, dtype=object).reshape(-1)
    assert col.offsets.size == flat.size + 1 and col.offsets.dtype == np.int64
    pattern = col.data_type.pattern
    rows = pattern.dims[1:] if pattern.is_leading_variable else ()
    assert col.values.shape[1:] == rows  # rows of [null, d1..dk], else flat
    assert col.shapes.shape == (flat.size, pattern.ndim) and col.shapes.dtype == np.int64
    for i, cell in enumerate(flat):
        got = col.values[col.offsets[i] : col.offsets[i + 1]].reshape(col.shapes[i])
        assert got.shape == cell.shape and got.tobytes() == np.asarray(cell).tobytes()


@st.composite
def _case(draw: st.DrawFn) -> dict[str, Any]:
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    per = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    shards = tuple(i * p for i, p in zip(inner, per, strict=True))
    shape = tuple(draw(st.integers(1, 2 * s + 1)) for s in shards)
    kw: dict[str, Any] = {
        "config": {"write_empty_chunks": draw(st.booleans()), "order": draw(st.sampled_from("CF"))},
        "compressors": draw(st.sampled_from([None, ZstdCodec(level=1), Crc32cCodec()])),
    }
    if HAS_WRITE_ORDER:
        kw["order"] = draw(st.sampled_from(ORDERS))
    sharded = draw(st.booleans())
    location = draw(st.sampled_from(["start", "end"]))
    # The first write fills the whole array; a shrinking resize may follow, which leaves cells
    # past the new end in edge chunks (zarr keeps or drops them by its rules, and so must we).
    smaller = tuple(draw(st.integers(1, n)) for n in shape)
    writes = [tuple(slice(0, n) for n in shape)]
    for _ in range(draw(st.integers(1, 3))):
        box = []
        for n in smaller:
            lo = draw(st.integers(0, n - 1))
            box.append(slice(lo, draw(st.integers(lo + 1, n))))
        writes.append(tuple(box))
    return {
        "dtype": NDArray(
            dtype=draw(st.sampled_from(["int16", "float32"])), shape=draw(st.sampled_from(PATTERNS))
        ),
        "shape": shape,
        "chunks": inner,
        "shards": {"shape": shards, "index_location": location} if sharded else None,
        "kw": kw,
        "resize": smaller if draw(st.booleans()) else None,
        "writes": writes,
        # (BATCH_SHARE, BATCH_BYTES): a chunk row a batch, about a quarter of the read, all
        "batch": draw(st.sampled_from([(1 << 20, 1), (4, 1), (1, 1 << 40)])),
        "seed": draw(st.integers(0, 2**16)),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_writes_leave_the_objects_zarr_leaves_and_reads_match(case: dict[str, Any]) -> None:
    rng = np.random.default_rng(case["seed"])
    dtype = case["dtype"]
    ref_store: dict[str, Any] = {}
    col_store: dict[str, Any] = {}
    args = (dtype, case["shape"], case["chunks"], case["shards"])
    ref = _create(ref_store, *args, **dict(case["kw"]))
    col = _create(col_store, *args, **dict(case["kw"]))
    with pytest.MonkeyPatch.context() as patch:
        # reads in several batches too
        patch.setattr(engine, "FIRST_BATCH_CELLS", 1)
        patch.setattr(engine, "BATCH_SHARE", case["batch"][0])
        patch.setattr(engine, "BATCH_BYTES", case["batch"][1])
        for step, selection in enumerate(case["writes"]):
            if step == 1 and case["resize"] is not None:
                ref.resize(case["resize"])
                col.resize(case["resize"])
            cells = _cells(rng, dtype, tuple(s.stop - s.start for s in selection))
            with zarr_own_writes():
                ref[selection] = cells
            _write(col, cells, selection)
            assert _stored(col_store) == _stored(ref_store), f"after writing {selection}"
        got = read_columnar(col)
        assert got.shape == tuple(col.shape)
        _assert_reads_equal(got, ref[...])
        box = tuple(slice(n // 3, n) for n in col.shape)
        want = read_columnar(col, box)
        _assert_reads_equal(want, ref[box])
        # the same read into buffers of the caller's, with room to spare
        room = np.empty(want.values.size + 3, dtype.item_dtype)
        into = read_columnar(col, box, out=(room, np.empty(want.offsets.size, np.int64)))
        assert into.values.shape == want.values.shape and np.array_equal(into.offsets, want.offsets)
        assert into.values.tobytes() == want.values.tobytes()
        assert np.shares_memory(into.values, room) or not into.values.size
    # What a read gives, written back as it is, stores what zarr's object path stores.
    args = (dtype, tuple(col.shape), case["chunks"], case["shards"])
    copy_store: dict[str, Any] = {}
    objects_store: dict[str, Any] = {}
    write_columnar(_create(copy_store, *args, **dict(case["kw"])), *got, shapes=got.shapes)
    with zarr_own_writes():
        _create(objects_store, *args, **dict(case["kw"]))[...] = ref[...]
    assert _stored(copy_store) == _stored(objects_store)


# ---------------------------------------------------------------------------------- out=


@pytest.mark.parametrize("pattern", [(None, 2), (None, None)])
def test_a_read_fills_the_callers_buffers(pattern: tuple[int | None, ...]) -> None:
    dtype = NDArray(dtype="float32", shape=pattern)
    array = _create({}, dtype, (6, 5), (2, 2), None)
    cells = _cells(np.random.default_rng(7), dtype, (6, 5))
    array[...] = cells
    first = read_columnar(array, (slice(1, 5), slice(0, 5)))
    values, offsets = first
    # the data change (fewer items); the next read reuses the first one's arrays
    empty = np.zeros([0 if d is None else d for d in pattern], np.float32)
    array[1, 0] = empty
    again = read_columnar(array, (slice(1, 5), slice(0, 5)), out=first)
    assert np.shares_memory(again.values, values) and again.offsets is offsets
    expect = cells[1:5].copy()
    expect[0, 0] = empty
    _assert_reads_equal(again, expect)
    flat = np.empty(1000, np.float32)  # any C-contiguous shape, viewed flat
    into = read_columnar(array, 2, out=(flat, np.empty(6, np.int64)))
    _assert_reads_equal(into, cells[2])
    assert np.shares_memory(into.values, flat)


def test_buffers_that_cannot_take_the_read_are_refused() -> None:
    dtype = NDArray(dtype="float32", shape=(None, 2))
    array = _create({}, dtype, (4,), (2,), None)
    array[...] = _cells(np.random.default_rng(3), dtype, (4,), empty=0)
    items = read_columnar(array).values.size
    room, offsets = np.empty(items, np.float32), np.empty(5, np.int64)
    cases: list[tuple[Any, type[Exception], str]] = [
        (room, TypeError, "a pair"),
        ((room.astype(np.float64), offsets), TypeError, "dtype float64.*dtype='<f4'"),
        ((room, offsets.astype(np.int32)), TypeError, "offsets has dtype int32"),
        ((room, [0, 0, 0, 0, 0]), TypeError, "numpy array, got list"),
        ((np.empty((items, 2), np.float32)[:, 0], offsets), ValueError, "not C-contiguous"),
        ((room, np.broadcast_to(offsets, (5,))), ValueError, "offsets is read-only"),
        ((room, np.empty(4, np.int64)), ValueError, r"shape \(4,\).*4 cells.*\(5,\)"),
        ((room[:-1], offsets), ValueError, f"hold {items - 1:,} items.*hold {items:,}"),
    ]
    for out, error, message in cases:
        with pytest.raises(error, match=message):
            read_columnar(array, out=out)
    shared = np.empty(items + 10, np.int64)
    with pytest.raises(ValueError, match="overlap"):
        read_columnar(array, out=(shared.view(np.float32)[:items], shared[:5]))
    assert read_columnar(array, out=(room, offsets)).values.size == items  # exactly enough


def test_values_too_small_name_the_items_the_whole_selection_needs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    dtype = NDArray(dtype="float32", shape=(None, 2))
    array = _create({}, dtype, (12,), (2,), None)
    cells = np.empty(12, dtype=object)
    cells[:] = [np.ones((i, 2), np.float32) for i in range(12)]  # later cells are larger
    array[...] = cells
    items = 2 * sum(range(12))
    monkeypatch.setattr(engine, "FIRST_BATCH_CELLS", 1)
    monkeypatch.setattr(engine, "BATCH_BYTES", 1)  # a chunk a batch: the estimate runs short
    small = (np.empty(items // 3, np.float32), np.empty(13, np.int64))
    with pytest.raises(ValueError, match=f"hold {items:,}: pass values with room for {items:,}"):
        read_columnar(array, out=small)
    # a memory-mapped file is a numpy array too: the read fills the file's pages
    mapped = np.lib.format.open_memmap(tmp_path / "v.npy", "w+", np.float32, (items,))
    col = read_columnar(array, out=(mapped, np.empty(13, np.int64)))
    _assert_reads_equal(col, cells)
    assert np.shares_memory(col.values, mapped) and type(col.values) is np.ndarray


# ----------------------------------------------------------------------------- selections

F32_NN = NDArray(dtype="float32", shape=(None, None))


def _filled(shape: tuple[int, ...], chunks: tuple[int, ...], **kw: Any) -> tuple[Any, np.ndarray]:
    array = _create({}, F32_NN, shape, chunks, kw.pop("shards", None), **kw)
    cells = _cells(np.random.default_rng(1), F32_NN, shape)
    array[...] = cells
    return array, cells


@pytest.mark.parametrize(
    "selection",
    [..., 2, (slice(1, 4), 3), (0, slice(None)), (slice(2, 2), 0), (..., 1), (-1, -2)],
)
def test_selections_are_numpy_boxes(selection: Any) -> None:
    array, cells = _filled((5, 6), (2, 4))
    col = read_columnar(array, selection)
    want = cells[selection]
    if selection == (-1, -2):  # ints on every axis: one cell, and numpy hands the cell itself
        want = np.array([want, None], dtype=object)[:1].reshape(())
    assert col.shape == np.shape(want)
    _assert_reads_equal(col, want)


def test_unwritten_cells_are_fill_cells() -> None:
    array = _create({}, NDArray(dtype="int8", shape=(None,)), (6,), (2,), None, fill_value=[3, 4])
    array[2:4] = np.array([np.arange(3, dtype="int8")] * 2 + [None], dtype=object)[:2]
    col = read_columnar(array)
    assert col.shapes[:, 0].tolist() == [2, 2, 3, 3, 2, 2]
    assert col.values.tolist() == [3, 4, 3, 4, 0, 1, 2, 0, 1, 2, 3, 4, 3, 4]


def test_zero_d_and_empty_arrays() -> None:
    array = _create({}, F32_NN, (), None, None)
    assert read_columnar(array).shapes.tolist() == [[0, 0]]
    write_columnar(array, np.arange(6, dtype="f4"), [0, 6], shapes=[[2, 3]])
    col = read_columnar(array)
    assert col.shape == () and col.values.tolist() == list(range(6))
    empty = _create({}, F32_NN, (0, 4), (2, 2), None)
    col = read_columnar(empty)
    assert col.shape == (0, 4) and col.offsets.tolist() == [0]
    write_columnar(empty, np.zeros(0, "f4"), [0], shapes=np.zeros((0, 2), int))


def test_array_to_array_codecs_are_zarrs_business() -> None:
    transpose = [TransposeCodec(order=(1, 0))]
    # Chunk (0, 0) holds cells 0 1 2 3 of the write, which it stores as 0 2 1 3.
    ref = _create({}, F32_NN, (3, 2), (2, 2), None, filters=transpose)
    cells = _cells(np.random.default_rng(4), F32_NN, (3, 2), empty=0)  # no two cells alike
    with zarr_own_writes():
        ref[...] = cells
    col = _create({}, F32_NN, (3, 2), (2, 2), None, filters=transpose)
    _write(col, cells)
    assert _stored(col.store._store_dict) == _stored(ref.store._store_dict)
    _assert_reads_equal(read_columnar(col, (slice(1, 3), slice(0, 2))), cells[1:3, 0:2])


@dataclasses.dataclass(frozen=True)
class _OpaqueCodec(ToyCodec):
    """A serializer of ndarray cells with no block codec: no columnar access."""

    block_codec = None  # type: ignore[assignment]


def test_all_fixed_patterns_are_columnar_through_the_bytes_codec() -> None:
    dtype = NDArray(dtype="int16", shape=(3, 2))
    ref, col = (zarr.create_array({}, shape=(5,), chunks=(2,), dtype=dtype) for _ in range(2))
    cells = np.empty(5, dtype=object)
    cells[:] = [np.arange(6, dtype="<i2").reshape(3, 2) + 10 * i for i in range(5)]
    with zarr_own_writes():
        ref[:] = cells
    _write(col, cells, slice(None))
    assert _stored(col.store._store_dict) == _stored(ref.store._store_dict)
    _assert_reads_equal(read_columnar(col, slice(1, 5)), cells[1:5])


def test_input_is_checked_before_anything_is_written() -> None:
    array = _create({}, F32_NN, (4,), (2,), None)
    with pytest.raises(ValueError, match="must have 5 entries"):
        write_columnar(array, np.zeros(0, "f4"), [0, 0, 0, 0], shapes=np.zeros((4, 2), int))
    with pytest.raises(TypeError, match="'ndarray' data type"):
        read_columnar(zarr.create_array({}, shape=(2,), dtype="int8"))
    opaque = zarr.create_array({}, shape=(2,), dtype=F32_NN, serializer=_OpaqueCodec())
    with pytest.raises(ValueError, match="read it as a plain zarr array"):
        read_columnar(opaque)
    assert sorted(array.store._store_dict) == ["zarr.json"]


@pytest.mark.parametrize("value", [2**24 + 1, 2**40 + 1])
def test_integers_that_a_float_element_dtype_would_round_are_refused(value: int) -> None:
    dtype = NDArray(dtype="float32", shape=(None,))
    array = _create({}, dtype, (2,), (2,), None)
    values = np.array([value, 2**24], dtype=np.int64)
    offsets = np.array([0, 1, 2])
    shapes = np.array([[1], [1]])
    with pytest.raises(
        TypeError, match=rf"^values\[0\] \(dtype int64\), in cell 0, holds the integer {value}, "
    ):
        write_columnar(array, values, offsets, slice(None), shapes=shapes)
    cells = np.empty(2, dtype=object)
    cells[:] = [values[:1], values[1:]]
    with pytest.raises(
        TypeError,
        match=rf"^cell \(0,\) of shape \(1,\) and dtype int64 holds the integer {value}, ",
    ):
        array[:] = cells
    assert sorted(array.store._store_dict) == ["zarr.json"]
    write_columnar(array, values - 1, offsets, shapes=shapes)  # exact values are kept
    assert [int(c[0]) for c in array[:]] == [value - 1, 2**24 - 1]


# ------------------------------------------------------------------------------ corruption


def _corrupt(array: Any, key: str) -> None:
    store = array.store._store_dict
    raw = bytearray(store[key].to_bytes())
    raw[0:4] = (99).to_bytes(4, "little")  # the chunk claims 99 cells
    store[key] = store[key].from_bytes(bytes(raw))


@pytest.mark.parametrize("sharded", [False, True])
def test_a_corrupt_chunk_is_named_on_every_read_path(tmp_path: Any, sharded: bool) -> None:
    """Object reads, one cell, columns and xarray all name the array's path, the chunk's key
    and what is wrong with it (here the compressor's failure)."""
    import xarray as xr

    group = zarr.open_group(tmp_path, mode="w")
    array = group.create_array(
        "vectors", shape=(8,), chunks=(2,) if sharded else (4,), shards=(4,) if sharded else None,
        dtype=F32_NN,
        serializer=ToyCodec(), compressors=ZstdCodec(level=1), dimension_names=["x"],
    )  # fmt: skip
    array[...] = _cells(np.random.default_rng(2), F32_NN, (8,), empty=0)
    (path,) = [p for p in (tmp_path / "vectors" / "c").iterdir() if p.name == "1"]
    raw = bytearray(path.read_bytes())
    raw[4:12] = b"\xff" * 8  # inside the (first inner) chunk's zstd frame
    path.write_bytes(bytes(raw))
    name = ("inner chunk 0 of shard" if sharded else "chunk") + " 'c/1' of array 'vectors'"
    reads = [lambda: array[:], lambda: array[5], lambda: read_columnar(array, slice(4, 6))]
    if Version(xr.__version__) >= Version(XARRAY_MIN_VERSION):  # older xarray cannot open v3
        reads.append(lambda: xr.open_zarr(tmp_path, consolidated=False).load())
    for read in reads:
        with pytest.raises(StoredChunkError, match=f"the stored {name} does not decode .*Zstd"):
            read()


@pytest.mark.parametrize("sharded", [False, True])
def test_a_corrupt_chunk_is_named_the_first_in_order(sharded: bool, pipeline: str) -> None:
    array, _ = _filled((8, 4), (2, 2), compressors=None, shards=(4, 4) if sharded else None)
    if sharded:  # an inner chunk of a shard: overwrite the shard with a hand-corrupted copy
        store = array.store._store_dict
        raw = bytearray(store["c/1/0"].to_bytes())
        raw[0:4] = (99).to_bytes(4, "little")  # the first inner chunk laid out: (0, 0)
        store["c/1/0"] = store["c/1/0"].from_bytes(bytes(raw))
        where = "inner chunk 0 of shard 'c/1/0'"
    else:
        _corrupt(array, "c/3/1")
        _corrupt(array, "c/2/0")
        where = "chunk 'c/2/0'"
    with pytest.raises(ValueError, match=f"cannot decode the 'test-ndarray-toy' {where}"):
        read_columnar(array)


def test_a_read_of_whole_shards_names_the_inner_chunk_zarrs_codec_cannot_decode(
    pipeline: str,
) -> None:
    array, _ = _filled((8, 4), (2, 2), shards=(4, 4), compressors=ZstdCodec(level=1))
    store = array.store._store_dict
    raw = bytearray(store["c/1/0"].to_bytes())
    raw[0:4] = bytes(4)  # the first inner chunk laid out, (0, 0): no zstd frame
    store["c/1/0"] = store["c/1/0"].from_bytes(bytes(raw))
    with pytest.raises(StoredChunkError, match="stored inner chunk 0 of shard 'c/1/0' does not"):
        read_columnar(array)


def test_a_corrupt_chunk_the_write_keeps_cells_of_stops_it_before_anything_is_stored() -> None:
    array, _ = _filled((40,), (4,), compressors=None)
    _corrupt(array, "c/9")
    before = _stored(array.store._store_dict)
    cells = _cells(np.random.default_rng(2), F32_NN, (38,))
    with pytest.raises(ValueError, match="chunk 'c/9'"):  # named, as a read names it
        _write(array, cells, slice(0, 38))
    assert _stored(array.store._store_dict) == before
    _write(array, _cells(np.random.default_rng(3), F32_NN, (40,)))  # whole


# ----------------------------------------------------------------------- threads, batches


def test_chunks_are_decoded_and_copied_in_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's chunks are decoded and copied in worker threads, a few runs per core."""
    array, cells = _filled((30,), (3,))
    jobs: list[int] = []
    to_thread = _store.asyncio.to_thread

    async def counting(fn: Any, *args: Any) -> Any:
        if args and isinstance(args[0], list):  # ours: a run of chunks (not a compressor's)
            jobs.append(len(args[0]))
        return await to_thread(fn, *args)

    monkeypatch.setattr(_store.asyncio, "to_thread", counting)
    monkeypatch.setattr(_store.os, "cpu_count", lambda: 2)
    _assert_reads_equal(read_columnar(array, slice(2, 29)), cells[2:29])
    assert jobs and max(jobs) <= -(-10 // (2 * _store.JOBS_PER_CORE))  # runs of chunks
    jobs.clear()
    _assert_reads_equal(read_columnar(array, slice(3, 6)), cells[3:6])  # one chunk: no thread
    assert jobs == []
    monkeypatch.setattr(_store.os, "cpu_count", lambda: None)
    _assert_reads_equal(read_columnar(array), cells)
    assert jobs == []


def test_batches_decode_whole_chunks_a_few_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    array, cells = _filled((12, 6), (2, 3), shards=(4, 6))
    sizes: list[int] = []
    original = engine.Reader.copy

    async def spy(self: Any, moves: Any, *args: Any, **kw: Any) -> None:
        sizes.append(len(moves))  # chunks decoded in the batch
        await original(self, moves, *args, **kw)

    monkeypatch.setattr(engine.Reader, "copy", spy)
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 1)  # a batch: an inner chunk at least
    # The 11 x 5 box spans 6 rows of 2 inner chunks: batches of half the box take 2 rows.
    monkeypatch.setattr(engine, "FIRST_BATCH_CELLS", 1)
    monkeypatch.setattr(engine, "BATCH_SHARE", 2)
    monkeypatch.setattr(engine, "BATCH_BYTES", 1)
    _assert_reads_equal(read_columnar(array, (slice(1, 12), slice(1, 6))), cells[1:12, 1:6])
    assert sizes == [4, 4, 4]
    sizes.clear()
    monkeypatch.setattr(engine, "BATCH_SHARE", 1 << 20)  # one row of inner chunks at least
    _assert_reads_equal(read_columnar(array, (slice(1, 12), slice(1, 6))), cells[1:12, 1:6])
    assert sizes == [2] * 6


def test_the_first_batch_ends_on_a_row_of_shards() -> None:
    """The first batch (4,096 cells here) would cut the first row of shards (8,192 cells) in
    two: it takes the whole row, and zarr fetches every shard of the read in one request."""
    store = RequestLog()
    array = _create(store, F32_NN, (256, 64), (16, 16), (128, 32), compressors=None)
    cells = _cells(np.random.default_rng(5), F32_NN, (256, 64), empty=0.1)
    array[...] = cells
    store.asked.clear()
    _assert_reads_equal(read_columnar(array), cells)
    shards = sorted(k for k, _ in store.asked if k != "zarr.json")
    assert shards == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"], store.asked  # one request each
    assert all(r is None for k, r in store.asked if k != "zarr.json")  # whole objects


def test_whole_shards_are_one_request_and_cut_shards_their_index_and_ranges() -> None:
    """A batch of whole shards fetches each shard in one request and cuts it by its index;
    a shard the read cuts has its index fetched once and its inner chunks by range."""
    store = RequestLog()
    array = _create(store, F32_NN, (12, 6), (2, 3), (4, 6), compressors=ZstdCodec(level=1))
    cells = _cells(np.random.default_rng(6), F32_NN, (12, 6), empty=0.2)
    array[...] = cells
    store.asked.clear()
    _assert_reads_equal(read_columnar(array), cells)
    assert sorted(store.asked) == [(f"c/{i}/0", None) for i in range(3)]
    store.asked.clear()
    _assert_reads_equal(read_columnar(array, (slice(0, 12), slice(0, 3))), cells[:, :3])
    whole = [r for _, r in store.asked if r is None]
    # an index, and one request for both inner chunks (neighbours in the shard, coalesced)
    assert not whole and len(store.asked) == 3 * (1 + 1), store.asked
    with zarr.config.set({"array.sharding_coalesce_max_gap_bytes": -1}):
        store.asked.clear()  # no coalescing: one request each
        array = zarr.open_array(store)
        _assert_reads_equal(read_columnar(array, (slice(0, 12), slice(0, 3))), cells[:, :3])
        asked = [k for k, r in store.asked if r is not None]  # opening asked for metadata
        assert len(asked) == 3 * (1 + 2), store.asked


@dataclasses.dataclass(frozen=True)
class _AsyncOnly(BytesBytesCodec):
    """A bytes -> bytes codec with no synchronous decode (a third-party one, say): it adds a
    byte on encode and checks it on decode."""

    is_fixed_size = True

    async def _decode_single(self, chunk: Any, spec: Any) -> Any:
        raw = chunk.to_bytes()
        assert raw[-1:] == b"!", "the byte the encode added"
        return chunk.from_bytes(raw[:-1])

    async def _encode_single(self, chunk: Any, spec: Any) -> Any:
        return chunk.from_bytes(chunk.to_bytes() + b"!")

    def compute_encoded_size(self, input_byte_length: int, _spec: Any) -> int:
        return input_byte_length + 1


def test_whole_shards_with_an_inner_codec_without_synchronous_decode(pipeline: str) -> None:
    """zarr's FusedCodecPipeline falls back to its async path for such a shard view; every
    pipeline reads the cells zarr does."""
    array = _create({}, F32_NN, (9, 6), (2, 3), (4, 6), compressors=_AsyncOnly())
    cells = _cells(np.random.default_rng(7), F32_NN, (9, 6), empty=0.2)
    array[...] = cells
    _assert_reads_equal(read_columnar(array), cells)
    _assert_reads_equal(read_columnar(array, (slice(4, 9), slice(1, 6))), cells[4:, 1:])


class _InFlight(zarr.storage.WrapperStore[Any]):
    """A store over another whose GETs take a while (asynchronous only), counting how many
    are in flight at once."""

    # zarr >= 3.3's FusedCodecPipeline reads a store with synchronous IO one request at a time
    _supports_sync_io = False

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.now = self.peak = 0

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.002)
            return await self._store.get(key, prototype, byte_range)
        finally:
            self.now -= 1


@pytest.mark.parametrize("concurrency", [2, 5])
def test_requests_in_flight_are_bounded_by_zarrs_setting(
    monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    """A read of many shards keeps at most zarr's ``async.concurrency`` requests in flight
    for each of its fetches, and two fetches at once (one fetched ahead)."""
    store = _InFlight(zarr.storage.MemoryStore())
    array = _create(store, F32_NN, (2048,), (16,), (64,), compressors=None)
    cells = _cells(np.random.default_rng(6), F32_NN, (2048,), empty=0.1)
    array[...] = cells
    monkeypatch.setattr(engine, "FIRST_BATCH_CELLS", 1)
    monkeypatch.setattr(engine, "BATCH_SHARE", 4)  # batches of a quarter: 8 shards each
    monkeypatch.setattr(engine, "BATCH_BYTES", 1)
    with zarr.config.set({"async.concurrency": concurrency}):
        store.peak = 0
        _assert_reads_equal(read_columnar(array), cells)
    assert concurrency <= store.peak <= 2 * concurrency, store.peak


def _events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record when the reader's fetches and copies start and end."""
    events: list[str] = []
    fetch, copy = engine.Reader.fetch, engine.Reader.copy

    async def fetching(self: Any, part: Any) -> Any:
        events.append("fetch")
        out = await fetch(self, part)
        events.append("fetched")
        return out

    async def copying(self: Any, *args: Any, **kw: Any) -> None:
        events.append("copy")
        await copy(self, *args, **kw)
        events.append("copied")

    monkeypatch.setattr(engine.Reader, "fetch", fetching)
    monkeypatch.setattr(engine.Reader, "copy", copying)
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 1)  # batches of one inner chunk allowed
    return events


def test_the_next_batch_is_fetched_while_one_is_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    array, cells = _filled((64,), (4,), compressors=ZstdCodec(level=1))
    events = _events(monkeypatch)
    monkeypatch.setattr(engine, "FIRST_BATCH_CELLS", 1)
    monkeypatch.setattr(engine, "BATCH_BYTES", 1)  # batches of a sixteenth: one chunk each
    _assert_reads_equal(read_columnar(array), cells)
    assert events.count("fetch") == events.count("copy") == 16
    # the second fetch starts before the first copy; never more than two batches are held
    assert events.index("fetch", 1) < events.index("copy")
    assert max(_in_flight(events)) == 2


def _in_flight(events: list[str]) -> list[int]:
    """Batches fetched (or being fetched) and not yet copied, after every event."""
    alive, out = 0, []
    for event in events:
        alive += {"fetch": 1, "copied": -1}.get(event, 0)
        out.append(alive)
    return out


def test_batches_take_turns_when_a_chunk_is_larger_than_a_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    array, cells = _filled((64,), (16,), compressors=None)  # 4 chunks, each a quarter
    events = _events(monkeypatch)
    monkeypatch.setattr(engine, "FIRST_BATCH_CELLS", 1)
    monkeypatch.setattr(engine, "BATCH_BYTES", 1)
    _assert_reads_equal(read_columnar(array), cells)
    assert events == ["fetch", "fetched", "copy", "copied"] * 4
    assert max(_in_flight(events)) == 1


def test_a_corrupt_chunk_in_a_batch_fetched_ahead_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    array, _ = _filled((64,), (4,), compressors=None)
    monkeypatch.setattr(engine, "FIRST_BATCH_CELLS", 1)
    monkeypatch.setattr(engine, "BATCH_BYTES", 1)
    _corrupt(array, "c/11")
    with pytest.raises(ValueError, match="chunk 'c/11'"):
        read_columnar(array)
    array.store._store_dict["c/5"] = array.store._store_dict["c/5"].from_bytes(b"\x01")
    with pytest.raises(Exception, match="'c/5'"):  # zarr cannot read it (truncated): named too
        read_columnar(array)


def test_a_batch_holds_an_inner_chunk_a_core() -> None:
    """So that its chunks decode side by side: 10 chunks of 100,000 cells, 2 cores."""
    budget = engine._Budget(1_000_000, 200_000)
    budget.observe(100_000, 6 << 20)  # the first batch: one chunk
    assert budget.cells() == 200_000  # BATCH_BYTES alone would take 1.3 chunks


@pytest.mark.parametrize(
    ("count", "batches", "share"),
    [
        # (z): the first sixteenth holds 44 MiB, so will every batch
        (1 << 20, [44 << 20], 44 << 20),
        # unwritten chunks first: no estimate yet, then an eighth holds 44 MiB (a half of it
        # filled), so a batch may hold 22 MiB
        (1 << 20, [0, 44 << 20], 22 << 20),
        (100_000, [400_000], engine.BATCH_BYTES),  # a small read: BATCH_BYTES
    ],
)
def test_the_budget_of_a_batch(count: int, batches: list[int], share: int) -> None:
    def after_history() -> engine._Budget:
        budget = engine._Budget(count, 1)
        assert budget.cells() == max(engine.FIRST_BATCH_CELLS, count // engine.BATCH_SHARE)
        for nbytes in batches:
            budget.observe(budget.cells(), nbytes)
        return budget

    budget = after_history()
    per_cell = budget.nbytes / budget.seen
    cells = budget.cells()
    assert abs(cells * per_cell - share) <= 0.01 * share + per_cell
    # a batch a little over a sixteenth of the output is fetched ahead, one twice that is not
    sixteenth = budget.estimate() / engine.BATCH_SHARE
    n = int(sixteenth / per_cell)  # the cells of a sixteenth
    assert after_history().observe(n, int(1.2 * sixteenth))
    assert not after_history().observe(n, int(2 * sixteenth))


# --------------------------------------------------------------------------- aligned arrays


def _zagg_like(tmp_path: Any, sharded: bool = True) -> tuple[Any, np.ndarray]:
    """A group as zagg writes it: centroids (n, 2) float32 and their locations and times
    (n,) uint64, row-aligned, sharded or not; plus a plain count array. Empty cells, and the
    first chunk all empty."""
    from zarr_ndarray_dtype import write_aligned

    group = zarr.open_group(tmp_path, mode="w")
    grid = {"shape": (6, 5), "chunks": (2, 2), "serializer": ToyCodec()}
    grid["shards"] = (4, 4) if sharded else None
    group.create_array("centroids", dtype=NDArray("float32", (None, 2)), **grid)
    for name in ("locations", "times"):
        group.create_array(name, dtype=NDArray("uint64", (None,)), **grid)
    group.create_array("count", shape=(6, 5), chunks=(2, 2), dtype="int32")
    rng = np.random.default_rng(4)
    counts = rng.poisson(2, (6, 5))
    counts[:2, :2] = 0  # an all-empty chunk
    offsets = np.concatenate([[0], np.cumsum(counts)])
    rows = int(offsets[-1])
    columns = {
        "centroids": rng.random((rows, 2)).astype(np.float32),
        "locations": np.arange(rows, dtype=np.uint64),
        "times": np.arange(rows, dtype=np.uint64) * 10,
    }
    write_aligned(group, columns, offsets)
    return group, offsets


@pytest.mark.parametrize("sharded", [True, False])
def test_aligned_arrays_read_together_share_one_offsets(tmp_path: Any, sharded: bool) -> None:
    from zarr_ndarray_dtype import read_aligned

    group, _ = _zagg_like(tmp_path, sharded)
    whole = read_aligned(group)
    assert np.diff(whole["times"].offsets).reshape(6, 5)[:2, :2].tolist() == [[0, 0], [0, 0]]
    box = (slice(1, 5), slice(2, 5))
    cols = read_aligned(group, box)
    assert sorted(cols) == ["centroids", "locations", "times"]  # ndarray arrays only
    assert len({id(c.offsets) for c in cols.values()}) == 1
    for name, col in cols.items():
        alone = read_columnar(group[name], box)
        assert col.shape == alone.shape == (4, 3)
        assert np.array_equal(col.offsets, alone.offsets)
        assert col.values.tobytes() == alone.values.tobytes()
    two = read_aligned({"a": group["locations"], "b": group["times"]}, 3)
    assert two["a"].shape == (5,) and np.array_equal(two["b"].values, two["a"].values * 10)


@pytest.mark.parametrize("sharded", [True, False])
def test_misaligned_cells_and_arrays_are_named(tmp_path: Any, sharded: bool) -> None:
    from zarr_ndarray_dtype import AlignmentError, read_aligned

    group, offsets = _zagg_like(tmp_path, sharded)
    rows = int(offsets[19] - offsets[18])  # cell (3, 3): the last of a shard (unsharded: chunk)
    group["times"][3, 3] = np.arange(rows + 7, dtype=np.uint64)
    with pytest.raises(
        AlignmentError,
        match=rf"cell \(3, 3\) .*'locations': {rows} rows, 'times': {rows + 7} rows",
    ):
        read_aligned(group, (slice(2, 6), slice(1, 5)))  # array coordinates, not the box's
    assert read_aligned(group, (slice(4, 6), ...))["times"].shape == (2, 5)
    other = zarr.create_array(
        {}, shape=(6, 4), chunks=(2, 2), dtype=NDArray("uint64", (None,)), serializer=ToyCodec()
    )
    with pytest.raises(AlignmentError, match=r"different shapes \('a' \(6, 5\), 'b' \(6, 4\)\)"):
        read_aligned({"a": group["times"], "b": other})
    group.create_array(
        "grid", shape=(6, 5), chunks=(2, 2), dtype=NDArray("int8", (2, None)), serializer=ToyCodec()
    )
    with pytest.raises(ValueError, match=r"array 'grid' has the pattern \[2, null\]"):
        read_aligned(group)


def test_aligned_writes_check_everything_before_storing_anything(tmp_path: Any) -> None:
    from zarr_ndarray_dtype import read_aligned, write_aligned

    group, offsets = _zagg_like(tmp_path)
    before = {n: read_columnar(group[n]).values.tobytes() for n in ("centroids", "times")}
    box = (slice(0, 2), slice(0, 2))
    few = np.array([0, 1, 3, 3, 4])
    bad = {"centroids": np.ones((4, 2), "f4"), "times": np.ones(5, "u8")}  # 5 rows, not 4
    with pytest.raises(ValueError, match="offsets end at 4, but values has 5"):
        write_aligned(group, bad, few, box)
    with pytest.raises(ValueError, match=r"no array named \['nope'\]"):
        write_aligned(group, {"times": np.ones(4, "u8"), "nope": np.ones(4, "u8")}, few, box)
    assert {n: read_columnar(group[n]).values.tobytes() for n in before} == before
    write_aligned(group, {"centroids": np.ones((4, 2), "f4"), "times": np.ones(4, "u8")}, few, box)
    cols = read_aligned({"centroids": group["centroids"], "times": group["times"]}, box)
    assert cols["times"].offsets.tolist() == few.tolist()
    assert read_columnar(group["locations"]).values.size == int(offsets[-1])  # left as it was


def test_columnar_cells_are_the_object_read() -> None:
    array, cells = _filled((5, 6), (2, 4))
    got = read_columnar(array, (slice(1, 4), 2)).cells()
    assert got.shape == (3,) and all(not c.flags.writeable for c in got)
    assert [c.tobytes() for c in got] == [c.tobytes() for c in cells[1:4, 2]]
