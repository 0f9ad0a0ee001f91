"""Columnar access: read_columnar / write_columnar against zarr's object-array path.

The object path (``array[sel] = cells`` / ``array[sel]``) is the reference: columnar writes must
leave every stored object byte-identical to it, and columnar reads must return exactly its cells.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import zarr
from _zvn_columnar import F32x2, columns, make, objects, random_cells, write_both
from _zvn_helpers import ndarray_dtypes, object_array, random_cell
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec

import zarr_vlen_ndarray
from zarr_ndarray_dtype import CellTypeError, NDArrayDType
from zarr_ndarray_dtype import _store as engine
from zarr_ndarray_dtype import columnar as columnar_api
from zarr_ndarray_dtype.errors import StoredChunkError
from zarr_vlen_ndarray import VlenNDArrayCodec, read_columnar, write_columnar
from zarr_vlen_ndarray.framing import FramingError


def assert_cells_equal(values: np.ndarray, offsets: np.ndarray, cells: Any) -> None:
    assert len(offsets) == len(cells) + 1
    for i, cell in enumerate(cells):
        got = values[offsets[i] : offsets[i + 1]]
        assert got.shape == np.shape(cell)
        assert got.tobytes() == np.ascontiguousarray(cell).tobytes()


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("zstd", [False, True])
def test_round_trip_whole_and_slices(zstd: bool) -> None:
    cells = random_cells(F32x2, 23, seed=1)
    values, offsets = columns(cells, F32x2)
    array = make({}, 23, 5, zstd=zstd)
    write_columnar(array, values, offsets)
    got_v, got_o = read_columnar(array)
    assert got_v.dtype == np.dtype("<f4") and got_o.dtype == np.int64
    assert np.array_equal(got_v, values) and np.array_equal(got_o, offsets)
    assert_cells_equal(got_v, got_o, array[:])
    for sel in (slice(0, 5), slice(3, 17), slice(20, 23), slice(7, 8), slice(-4, None)):
        v, o = read_columnar(array, sel)
        assert_cells_equal(v, o, cells[sel])
    v, o = read_columnar(array, 4)
    assert_cells_equal(v, o, cells[4:5])
    v, o = read_columnar(array, slice(9, 9))
    assert v.shape == (0, 2) and o.tolist() == [0]


def test_unwritten_regions_read_as_empty_cells() -> None:
    array = make({}, 10, 4)
    values, offsets = read_columnar(array)
    assert values.shape == (0, 2) and offsets.tolist() == [0] * 11
    cells = random_cells(F32x2, 3, seed=2)
    write_columnar(array, *columns(cells, F32x2), selection=slice(4, 7))
    values, offsets = read_columnar(array)
    assert_cells_equal(
        values, offsets, [np.empty((0, 2), "f4")] * 4 + cells + [np.empty((0, 2))] * 3
    )


def test_non_empty_fill_is_repeated_for_missing_chunks() -> None:
    fill = np.array([[1.5, -2.0]], dtype="float32")
    array = make({}, 9, 4, fill=fill)
    values, offsets = read_columnar(array, slice(2, 9))
    assert offsets.tolist() == list(range(8))
    assert np.array_equal(values, np.repeat(fill, 7, axis=0))
    assert_cells_equal(values, offsets, array[2:9])


def test_fill_cells_in_written_chunks_and_partial_chunk_reads() -> None:
    fill = np.array([[7.0, 8.0]], dtype="float32")
    array = make({}, 10, 4, fill=fill)
    cell = np.arange(6, dtype="f4").reshape(3, 2)
    array[5] = cell
    values, offsets = read_columnar(array)
    expected = [fill] * 5 + [cell] + [fill] * 4
    assert_cells_equal(values, offsets, expected)


# --------------------------------------------------------------------- byte identity


@pytest.mark.parametrize("zstd", [False, True])
@pytest.mark.parametrize("write_empty_chunks", [False, True])
def test_chunks_byte_identical_to_object_path(zstd: bool, write_empty_chunks: bool) -> None:
    empty = np.empty((0, 2), "f4")
    writes = [
        (slice(0, 23), random_cells(F32x2, 23, seed=3)),
        (slice(3, 12), random_cells(F32x2, 9, seed=4)),  # partial chunks at both ends
        (slice(5, 10), [empty] * 5),  # a whole chunk of fill cells: elided unless asked
        (slice(20, 23), [empty] * 3),  # the edge chunk
        (slice(21, 22), random_cells(F32x2, 1, seed=5)),
    ]
    kwargs = {"zstd": zstd, "write_empty_chunks": write_empty_chunks}
    ref, col = write_both(23, 5, writes, **kwargs)
    assert objects(ref) == objects(col)
    assert ("c/1" in col) is write_empty_chunks  # cells 5..9 are all fill


def test_elision_with_non_empty_fill_value_and_nan() -> None:
    fill = np.array([[np.nan, 1.0]], dtype="float32")
    same = np.array([[np.nan, 1.0]], dtype="float32")
    other = np.array([[np.nan, 2.0]], dtype="float32")
    writes = [
        (slice(0, 8), [same] * 8),  # equal to the fill (NaN in the same place): elided
        (slice(8, 12), [same, same, other, same]),
        (slice(12, 14), [np.array([[1.0, np.nan]], dtype="f4")] * 2),
    ]
    ref, col = write_both(14, 4, writes, fill=fill)
    assert objects(ref) == objects(col)
    assert "c/0" not in col and "c/2" in col


def test_negative_zero_equals_zero_fill_like_zarr() -> None:
    fill = np.array([[0.0, 0.0]], dtype="float32")
    writes = [(slice(0, 4), [np.array([[-0.0, 0.0]], dtype="f4")] * 4)]
    ref, col = write_both(4, 4, writes, fill=fill)
    assert objects(ref) == objects(col)


@pytest.mark.parametrize("zstd", [False, True])
def test_sharded_writes_match_and_read_back(zstd: bool) -> None:
    writes = [
        (slice(0, 30), random_cells(F32x2, 30, seed=6)),
        (slice(4, 9), [np.empty((0, 2), "f4")] * 5),
        (slice(17, 19), random_cells(F32x2, 2, seed=7)),
    ]
    ref, col = write_both(30, 4, writes, zstd=zstd, shards=8)
    assert objects(ref) == objects(col)
    array = zarr.open_array(col, mode="r")
    values, offsets = read_columnar(array)
    assert_cells_equal(values, offsets, array[:])
    values, offsets = read_columnar(array, slice(5, 27))
    assert_cells_equal(values, offsets, array[5:27])


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("write_empty_chunks", [False, True])
@pytest.mark.parametrize("zstd", [False, True])
def test_sharded_writes_are_direct_and_byte_identical(
    location: str, write_empty_chunks: bool, zstd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 30 cells, inner chunks of 4, shards of 12: the last shard is partial (cells 24..29), and
    # its last inner chunk (28..31) runs past the end of the array.
    empty = np.empty((0, 2), "f4")
    writes = [
        (slice(0, 30), random_cells(F32x2, 30, seed=16)),
        (slice(4, 8), [empty] * 4),  # one whole inner chunk of fill cells: elided or not
        (slice(14, 19), random_cells(F32x2, 5, seed=17)),  # partial inner chunks, one shard
        (slice(10, 27), random_cells(F32x2, 17, seed=18)),  # spans three shards
        (slice(24, 30), [empty] * 6),  # the partial last shard becomes all fill
        (slice(29, 30), random_cells(F32x2, 1, seed=19)),
    ]
    kwargs = {
        "zstd": zstd,
        "shards": 12,
        "index_location": location,
        "write_empty_chunks": write_empty_chunks,
    }

    @contextmanager
    def no_cell_objects() -> Iterator[None]:  # the codec's object path fails in the writes
        with monkeypatch.context() as patch:
            for name in ("encode_chunk", "decode_chunk"):
                patch.setattr(VlenNDArrayCodec, name, lambda *a: pytest.fail("made cell objects"))
            yield

    _, col_store = write_both(30, 4, writes, check_each=True, guard=no_cell_objects, **kwargs)
    array = zarr.open_array(col_store, mode="r")
    values, offsets = read_columnar(array)
    assert_cells_equal(values, offsets, array[:])


def test_sharded_write_of_only_fill_cells_deletes_the_shard() -> None:
    store: dict[str, Any] = {}
    array = make(store, 16, 4, shards=8)
    write_columnar(array, *columns(random_cells(F32x2, 16, seed=20), F32x2))
    assert sorted(objects(store)) == ["c/0", "c/1"]
    write_columnar(array, np.empty((0, 2), "f4"), np.zeros(9, np.int64), selection=slice(8, 16))
    assert sorted(objects(store)) == ["c/0"]


def test_sharded_write_keeps_untouched_inner_chunks_verbatim() -> None:
    store: dict[str, Any] = {}
    array = make(store, 16, 4, shards=16, zstd=True)
    array[:] = object_array(random_cells(F32x2, 16, seed=21))
    before = store["c/0"].to_bytes()
    write_columnar(array, *columns(random_cells(F32x2, 4, seed=22), F32x2), selection=slice(8, 12))
    after = store["c/0"].to_bytes()
    # Inner chunks 0 and 1 are unchanged and come first: their bytes are a common prefix. The
    # index at the end: 4 (offset, nbytes) u64 pairs and a crc32c.
    index_at = len(after) - (4 * 16 + 4)
    pairs = np.frombuffer(after[index_at : index_at + 64], "<u8").reshape(4, 2)
    kept = int(pairs[1, 0] + pairs[1, 1])
    assert after[:kept] == before[:kept]
    assert after != before


@pytest.mark.parametrize("location", ["start", "end"])
def test_sharded_read_with_missing_inner_chunks(location: str) -> None:
    array = make({}, 40, 4, shards=16, index_location=location)
    cells = random_cells(F32x2, 3, seed=8)
    array[5:8] = object_array(cells)  # one inner chunk of shard 0; shards 1, 2 missing
    array[36] = np.ones((2, 2), "f4")
    values, offsets = read_columnar(array)
    assert_cells_equal(values, offsets, array[:])


def test_bool_values_are_stored_as_zero_and_one() -> None:
    dtype = NDArrayDType(dtype="bool", shape=(None,))
    raw = np.array([0, 1, 2, 255, 0], dtype=np.uint8).view(bool)
    offsets = np.array([0, 2, 5])
    ref, col = write_both(2, 2, [], dtype)
    write_columnar(zarr.open_array(col), raw, offsets)
    zarr.open_array(ref)[:] = object_array([raw[:2].copy(), raw[2:].copy()])
    assert objects(ref) == objects(col)
    values, _ = read_columnar(zarr.open_array(col))
    assert values.view(np.uint8).tolist() == [0, 1, 1, 1, 0]


def test_chains_with_array_to_array_codecs_match_the_object_path() -> None:
    cells = random_cells(F32x2, 11, seed=9)
    stores: list[dict[str, Any]] = [{}, {}]
    arrays = [
        zarr.create_array(
            store,
            shape=(11,),
            chunks=(4,),
            dtype=F32x2,
            serializer=VlenNDArrayCodec(),
            filters=[zarr.codecs.TransposeCodec(order=(0,))],
            compressors=[ZstdCodec(level=3)],
        )
        for store in stores
    ]
    write_columnar(arrays[0], *columns(cells, F32x2))
    arrays[1][:] = object_array(cells)
    assert objects(stores[0]) == objects(stores[1])
    values, offsets = read_columnar(arrays[0], slice(2, 10))
    assert_cells_equal(values, offsets, cells[2:10])


# ---------------------------------------------------------------------------- properties


@st.composite
def write_plans(
    draw: st.DrawFn,
) -> tuple[NDArrayDType, int, int, bool, list[tuple[slice, list[Any]]]]:
    dtype = draw(ndarray_dtypes())
    n = draw(st.integers(1, 30))
    chunk = draw(st.integers(1, 8))
    zstd = draw(st.booleans())
    writes = []
    for w in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, n - 1))
        stop = draw(st.integers(start, n))
        seed = draw(st.integers(0, 2**31))
        rng = np.random.default_rng(seed)
        rows = draw(st.lists(st.integers(0, 3), min_size=stop - start, max_size=stop - start))
        writes.append((slice(start, stop), [random_cell(rng, dtype, r) for r in rows]))
        del w
    return dtype, n, chunk, zstd, writes


@settings(max_examples=40, deadline=None)
@given(write_plans())
def test_property_columnar_equals_object_path(
    plan: tuple[NDArrayDType, int, int, bool, list[tuple[slice, list[Any]]]],
) -> None:
    dtype, n, chunk, zstd, writes = plan
    ref_store, col_store = write_both(n, chunk, writes, dtype, zstd=zstd)
    assert objects(ref_store) == objects(col_store)
    # The same writes into shards of 2 inner chunks (index at the end, crc32c).
    ref_store, col_store = write_both(n, chunk, writes, dtype, zstd=zstd, shards=2 * chunk)
    assert objects(ref_store) == objects(col_store)
    array = zarr.open_array(col_store, mode="r")
    values, offsets = read_columnar(array)
    assert values.dtype == dtype.item_dtype and values.shape[1:] == dtype.shape[1:]
    assert_cells_equal(values, offsets, array[:])


@settings(max_examples=25, deadline=None)
@given(ndarray_dtypes(), st.lists(st.integers(0, 4), max_size=25), st.integers(1, 6), st.data())
def test_property_values_offsets_round_trip(
    dtype: NDArrayDType, rows: list[int], chunk: int, data: st.DataObject
) -> None:
    rng = np.random.default_rng(len(rows))
    cells = [random_cell(rng, dtype, r) for r in rows]
    values, offsets = columns(cells, dtype)
    n = len(rows)
    if n == 0:
        return
    array = make({}, n, chunk, dtype)
    write_columnar(array, values, offsets)
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    got_v, got_o = read_columnar(array, slice(start, stop))
    lo, hi = int(offsets[start]), int(offsets[stop])
    assert got_v.tobytes() == values[lo:hi].tobytes()
    assert np.array_equal(got_o, offsets[start : stop + 1] - lo)


# ----------------------------------------------------------------------------- hostile bytes


def _corrupt(store: dict[str, Any], key: str, mutate: Any) -> None:
    raw = bytearray(store[key].to_bytes())
    mutate(raw)
    store[key] = type(store[key]).from_bytes(bytes(raw))


@pytest.mark.parametrize(
    ("mutate", "phrase"),
    [
        (lambda raw: raw.__delitem__(slice(-3, None)), "truncated"),
        (lambda raw: raw.extend(b"\0\0"), "trailing"),
        (lambda raw: raw.__setitem__(0, raw[0] + 1), "claims"),
        (lambda raw: raw.__setitem__(slice(4, 8), (3).to_bytes(4, "little")), "whole number"),
    ],
)
def test_hostile_chunks_raise_the_codec_error(mutate: Any, phrase: str) -> None:
    store: dict[str, Any] = {}
    array = make(store, 6, 3)
    cells = [np.ones((2, 2), "f4")] * 6
    array[:] = object_array(cells)
    _corrupt(store, "c/1", mutate)
    with pytest.raises(FramingError, match=phrase) as columnar_error:
        read_columnar(array)
    assert "c/1" in str(columnar_error.value)
    with pytest.raises(ValueError, match=phrase):
        array[:]
    with pytest.raises(FramingError, match=phrase):  # a partial write reads the chunk first
        write_columnar(array, np.ones((1, 2), "f4"), np.array([0, 1]), selection=slice(4, 5))


def test_hostile_bool_bytes() -> None:
    dtype = NDArrayDType(dtype="bool", shape=(None,))
    store: dict[str, Any] = {}
    array = make(store, 2, 2, dtype)
    array[:] = object_array([np.array([True]), np.array([False, True])])
    _corrupt(store, "c/0", lambda raw: raw.__setitem__(8, 2))
    with pytest.raises(FramingError, match="0x02"):
        read_columnar(array)


def test_corrupt_zstd_chunk_is_a_value_error() -> None:
    store: dict[str, Any] = {}
    array = make(store, 4, 4, zstd=True)
    array[:] = object_array([np.ones((3, 2), "f4")] * 4)
    _corrupt(store, "c/0", lambda raw: raw.__setitem__(slice(4, 12), b"\xff" * 8))
    with pytest.raises(ValueError, match="c/0"):
        read_columnar(array)


def test_corrupt_shard_index() -> None:
    store: dict[str, Any] = {}
    array = make(store, 8, 4, shards=8)
    array[:] = object_array([np.ones((1, 2), "f4")] * 8)
    raw = bytearray(store["c/0"].to_bytes())
    # The index is at the end: 2 pairs of u64 then a crc32c; point chunk 1 past the shard.
    index_at = len(raw) - (2 * 16 + 4)
    raw[index_at + 16 : index_at + 24] = (10**6).to_bytes(8, "little")
    store["c/0"] = type(store["c/0"]).from_bytes(bytes(raw))
    with pytest.raises(StoredChunkError, match="index of the stored shard 'c/0' does not decode"):
        read_columnar(array)  # the checksum catches it


def make_sharded(
    store: dict[str, Any],
    n: int,
    shard: int,
    *,
    index_codecs: list[Any],
    codecs: list[Any] | None = None,
    index_location: str = "end",
) -> Any:
    """A 1-D array of ``n`` cells: shards of ``shard`` cells, inner chunks of 4, no compressors."""
    return zarr.create_array(
        store,
        shape=(n,),
        chunks=(shard,),
        dtype=F32x2,
        compressors=None,
        serializer=ShardingCodec(
            chunk_shape=(4,),
            codecs=codecs or [VlenNDArrayCodec()],
            index_codecs=index_codecs,
            index_location=index_location,
        ),
    )


def test_shard_index_out_of_range_without_checksum() -> None:
    store: dict[str, Any] = {}
    array = make_sharded(store, 8, 8, index_codecs=[BytesCodec()])
    array[:] = object_array([np.ones((1, 2), "f4")] * 8)
    raw = bytearray(store["c/0"].to_bytes())
    raw[-16:-8] = (10**6).to_bytes(8, "little")
    store["c/0"] = type(store["c/0"]).from_bytes(bytes(raw))
    with pytest.raises(FramingError, match=r"inner chunk 1 of shard 'c/0'.*truncated"):
        read_columnar(array)  # zarr hands over the bytes the index points at: none


def test_sharded_index_with_crc_is_recognized() -> None:
    codecs = [VlenNDArrayCodec(), ZstdCodec(level=1)]
    array = make_sharded({}, 8, 8, index_codecs=[BytesCodec(), Crc32cCodec()], codecs=codecs)
    cells = random_cells(F32x2, 8, seed=10)
    array[:] = object_array(cells)
    values, offsets = read_columnar(array)
    assert_cells_equal(values, offsets, cells)


@pytest.mark.parametrize("location", ["start", "end"])
def test_big_endian_shard_index_is_read(location: str) -> None:
    store: dict[str, Any] = {}
    index_codecs = [BytesCodec(endian="big"), Crc32cCodec()]
    array = make_sharded(store, 24, 12, index_codecs=index_codecs, index_location=location)
    cells = random_cells(F32x2, 24, seed=11)
    array[:] = object_array(cells)
    array[4:8] = object_array([np.empty((0, 2), "f4")] * 4)  # inner chunk 1 of shard 0 elided
    cells[4:8] = [np.empty((0, 2), "f4")] * 4
    # The index really is big-endian: inner chunk 0's length is a u64be (read little-endian
    # it would run far past the shard). Index: 3 (offset, nbytes) u64 pairs and a crc32c.
    raw = store["c/0"].to_bytes()
    index_at = 0 if location == "start" else len(raw) - (3 * 16 + 4)
    length = raw[index_at + 8 : index_at + 16]
    assert 0 < int.from_bytes(length, "big") < len(raw) < int.from_bytes(length, "little")
    values, offsets = read_columnar(array)
    assert_cells_equal(values, offsets, cells)
    values, offsets = read_columnar(array, slice(3, 21))
    assert_cells_equal(values, offsets, cells[3:21])


# ------------------------------------------------------------------------------ bad input


def test_nothing_is_written_when_the_input_is_refused() -> None:
    store: dict[str, Any] = {}
    array = make(store, 4, 2, NDArrayDType(dtype="int8", shape=(None,)))
    with pytest.raises(CellTypeError):
        write_columnar(array, np.array([1, 2, 1000]), np.array([0, 1, 2, 2, 3]))
    assert objects(store) == {}


def test_array_and_selection_checks() -> None:
    array = make({}, 5, 2)
    with pytest.raises(ValueError, match="step 1"):
        read_columnar(array, slice(0, 5, 2))
    with pytest.raises(IndexError, match="out of bounds"):
        read_columnar(array, 5)
    with pytest.raises(TypeError, match=r"an int, a slice or '\.\.\.', got list"):
        read_columnar(array, [1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must have 5 entries for 4 cells"):
        write_columnar(array, np.zeros((0, 2), "f4"), np.zeros(6, np.int64), slice(0, 4))
    plain = zarr.create_array({}, shape=(3,), chunks=(3,), dtype="int32")
    with pytest.raises(TypeError, match="'ndarray' data type"):
        read_columnar(plain)
    with pytest.raises(IndexError, match="1 dimensions, got a selection of 2"):
        read_columnar(array, (..., 0, 0))  # N-d arrays: see test_columnar_nd.py


def test_docstring_example_runs() -> None:
    import doctest

    result = doctest.testmod(columnar_api)  # its examples use this codec
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------------------------------------- parallel decode


def _count_thread_jobs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The runs of chunks each thread job of a read takes."""
    jobs: list[int] = []
    to_thread = engine.asyncio.to_thread

    async def counting(fn: Any, *args: Any) -> Any:
        if args and isinstance(args[0], list):  # ours: a run of chunks (not a compressor's)
            jobs.append(len(args[0]))
        return await to_thread(fn, *args)

    monkeypatch.setattr(engine.asyncio, "to_thread", counting)
    return jobs


def _many_chunks(store: dict[str, Any]) -> tuple[Any, list[np.ndarray]]:
    array = make(store, 61, 4, zstd=True)  # 16 chunks, the last one partial
    cells = random_cells(F32x2, 61, seed=12)
    array[:] = object_array(cells)
    del store["c/5"]  # a missing chunk reads as fill cells
    cells[20:24] = [np.empty((0, 2), "f4")] * 4
    return array, cells


def test_parallel_decode_equals_sequential(monkeypatch: pytest.MonkeyPatch) -> None:
    array, cells = _many_chunks({})
    jobs = _count_thread_jobs(monkeypatch)
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 1)
    sequential = read_columnar(array, slice(2, 59))
    assert jobs == []
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 4)
    parallel = read_columnar(array, slice(2, 59))
    assert jobs and max(jobs) <= 1  # 15 chunks in runs of one (4 runs a core)
    assert parallel.values.tobytes() == sequential.values.tobytes()
    assert parallel.values.shape == sequential.values.shape
    assert parallel.offsets.tolist() == sequential.offsets.tolist()
    assert_cells_equal(*parallel, cells[2:59])
    jobs.clear()
    assert_cells_equal(*read_columnar(array, slice(5, 7)), cells[5:7])  # one chunk: no thread
    assert jobs == []


def test_parallel_decode_raises_the_first_corrupt_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    store: dict[str, Any] = {}
    array = make(store, 24, 4)
    array[:] = object_array(random_cells(F32x2, 24, seed=13))
    _corrupt(store, "c/4", lambda raw: raw.extend(b"\0"))
    _corrupt(store, "c/2", lambda raw: raw.__setitem__(0, 9))
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 4)
    with pytest.raises(FramingError, match=r"'c/2'.*header claims 9"):
        read_columnar(array)
    with pytest.raises(FramingError, match=r"'c/4'.*trailing"):
        read_columnar(array, slice(12, 24))


# ---------------------------------------------------------------- ranged reads of few chunks


class _CountingStore(zarr.storage.MemoryStore):
    """A MemoryStore that records the byte ranges asked of it."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, Any]] = []

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        self.requests.append((key, byte_range))
        return await super().get(key, prototype, byte_range)

    # zarr >= 3.3's FusedCodecPipeline reads through the synchronous surface where a store has it
    def get_sync(self, key: str, *, prototype: Any = None, byte_range: Any = None) -> Any:
        self.requests.append((key, byte_range))
        return super().get_sync(key, prototype=prototype, byte_range=byte_range)  # type: ignore[misc]


@pytest.mark.parametrize("location", ["start", "end"])
def test_reading_few_inner_chunks_fetches_only_their_byte_ranges(location: str) -> None:
    store = _CountingStore()
    array = make(store, 64, 4, shards=64, index_location=location, zstd=True)  # type: ignore[arg-type]
    cells = random_cells(F32x2, 64, seed=23)
    array[:] = object_array(cells)
    array[20:24] = object_array([np.empty((0, 2), "f4")] * 4)  # inner chunk 5 elided
    store.requests.clear()
    values, offsets = read_columnar(array, slice(9, 14))  # inner chunks 2 and 3 of 16
    assert_cells_equal(values, offsets, cells[9:14])
    ranges = [r for k, r in store.requests if k == "c/0"]
    # the index, then the two inner chunks (one request where zarr coalesces neighbours)
    assert len(ranges) in (2, 3) and all(r is not None for r in ranges)
    values, offsets = read_columnar(array, slice(20, 26))  # an absent inner chunk, then one more
    assert_cells_equal(values, offsets, [np.empty((0, 2), "f4")] * 4 + cells[24:26])
    assert read_columnar(make({}, 64, 4, shards=64), slice(3, 4)).offsets.tolist() == [0, 0]


def test_ranged_read_of_a_corrupt_index_is_refused() -> None:
    store: dict[str, Any] = {}
    array = zarr.create_array(
        store,
        shape=(64,),
        chunks=(64,),
        dtype=F32x2,
        compressors=None,
        serializer=ShardingCodec(
            chunk_shape=(4,), codecs=[VlenNDArrayCodec()], index_codecs=[BytesCodec()]
        ),
    )
    array[:] = object_array([np.ones((1, 2), "f4")] * 64)
    raw = bytearray(store["c/0"].to_bytes())
    raw[-16:-8] = (10**6).to_bytes(8, "little")  # inner chunk 15 starts past the shard's end
    store["c/0"] = type(store["c/0"]).from_bytes(bytes(raw))
    past_the_end = r"inner chunk 15 of shard 'c/0'.*truncated"
    with pytest.raises(FramingError, match=past_the_end):
        read_columnar(array)  # zarr hands over the bytes the index points at: none
    release = tuple(int(part) for part in zarr.__version__.split(".")[:2])
    if release >= (3, 3):  # older releases read an empty byte range as "not stored"
        with pytest.raises(FramingError, match=past_the_end):
            read_columnar(array, slice(60, 64))
    store["c/0"] = type(store["c/0"]).from_bytes(bytes(raw[-20:]))  # shorter than the index
    with pytest.raises(StoredChunkError, match="index of the stored shard 'c/0' does not decode"):
        read_columnar(array, slice(0, 1))


# ------------------------------------------------------------------------------ memory


def test_read_allocates_the_output_once() -> None:
    """Chunks are extracted straight into one output: no per-chunk copies, no concatenation."""
    import tracemalloc

    array = make({}, 40_000, 2_000)  # raw chunks in a MemoryStore: reading them copies nothing
    rng = np.random.default_rng(5)
    rows = rng.poisson(8, 40_000)
    offsets = np.concatenate([[0], np.cumsum(rows)])
    values = rng.standard_normal((int(offsets[-1]), 2)).astype(np.float32)
    write_columnar(array, values, offsets)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        got, got_offsets = read_columnar(array, slice(5, 40_000))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert got.tobytes() == values[offsets[5] :].tobytes()
    assert got_offsets.tolist() == (offsets[5:] - offsets[5]).tolist()
    # The output (reserved at the read's estimate, a sixteenth over) and its offsets; beside
    # them a batch of chunks, their scan results (16 bytes a cell) and the kernel's temporaries
    # (the numpy one: a chunk-sized one per thread) stay under one more copy of the payload,
    # which per-chunk blocks or a concatenation would add.
    assert peak < 17 / 16 * got.nbytes + got_offsets.nbytes + 0.75 * got.nbytes


def test_one_read_columnar_for_every_pattern() -> None:
    import importlib.util

    import zarr_ndarray_dtype

    homes = [zarr_ndarray_dtype, zarr_vlen_ndarray]
    if importlib.util.find_spec("zarr_ragged_ndarray"):  # not beside this package's sdist
        import zarr_ragged_ndarray

        homes.append(zarr_ragged_ndarray)
    for name in ("Columnar", "read_columnar", "write_columnar"):
        assert len({id(getattr(home, name)) for home in homes}) == 1
    fixed = zarr.create_array(
        {}, shape=(2,), chunks=(2,), dtype=NDArrayDType(dtype="float32", shape=(3, 2))
    )
    write_columnar(fixed, np.arange(12, dtype="f4"), [0, 6, 12])  # not [null, ...]: flat items
    col = read_columnar(fixed)
    assert col.shapes.tolist() == [[3, 2], [3, 2]] and col.offsets.tolist() == [0, 6, 12]
    assert col.values.shape == (12,)
