"""Columnar access to N-d (and 0-d) arrays against zarr's object-array path.

The object path (``array[sel] = cells`` / ``array[sel]``) is the reference: columnar writes must
leave every stored object byte-identical to it, and columnar reads must return exactly its cells
in C order of the selection, with the selection's shape.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np
import pytest
import zarr
from _zvn_columnar import F32x2, columns, make, objects, write_both
from _zvn_columnar import random_cells as _random_cells
from _zvn_helpers import ndarray_dtypes, object_array, random_cell
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_ndarray_dtype import CellTypeError, NDArrayDType, unbox
from zarr_ndarray_dtype import _store as engine
from zarr_ndarray_dtype._grid import resolve
from zarr_vlen_ndarray import Columnar, VlenNDArrayCodec, read_columnar, write_columnar
from zarr_vlen_ndarray.framing import FramingError

I16 = NDArrayDType(dtype="int16", shape=(None,))


# N-d selections hold more cells than the 1-d tests': fewer rows in each.
random_cells = partial(_random_cells, mean=2.0)


def reference(array: Any, selection: Any) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """The cells of ``selection`` through zarr's object path, C order, and their shape."""
    got = array[selection]
    if not isinstance(got, np.ndarray) or got.dtype != object:
        return [unbox(got)], ()  # zarr 3.1.0 hands back the bare cell of a 0-d array
    return [unbox(cell) for cell in got.reshape(-1)], got.shape


def assert_same(col: Columnar, cells: list[np.ndarray], shape: tuple[int, ...]) -> None:
    assert col.shape == shape and len(col.offsets) == len(cells) + 1 == math.prod(shape) + 1
    assert int(col.offsets[0]) == 0 and int(col.offsets[-1]) == len(col.values)
    for i, cell in enumerate(cells):
        got = col.values[col.offsets[i] : col.offsets[i + 1]]
        assert got.shape == np.shape(cell) and got.tobytes() == np.asarray(cell).tobytes()


# ------------------------------------------------------------------------------- the result


def test_result_unpacks_as_values_and_offsets_with_a_shape() -> None:
    array = make({}, (3, 4), (2, 3))
    cells = random_cells(F32x2, 12, seed=1)
    write_columnar(array, *columns(cells, F32x2))
    col = read_columnar(array)
    values, offsets = col
    assert values is col.values and offsets is col.offsets and col.shape == (3, 4)
    assert_same(col, cells, (3, 4))
    again = pickle.loads(pickle.dumps(col))
    assert again.shape == (3, 4) and np.array_equal(again.values, values)
    np.testing.assert_array_equal(again.shapes, col.shapes)
    assert repr(col).startswith(
        "Columnar(NDArrayDType(dtype='float32', shape=(None, 2)), shape=(3, 4)"
    )


def test_one_d_results_carry_their_shape_too() -> None:
    array = make({}, (5,), (2,))
    assert read_columnar(array).shape == (5,)
    assert read_columnar(array, slice(1, 3)).shape == (2,)
    assert read_columnar(array, 3).shape == ()
    assert read_columnar(array, (np.int64(-1),)).shape == ()
    assert read_columnar(array, ...).shape == (5,)
    assert read_columnar(array, (..., 2)).shape == ()
    write_columnar(array, np.ones((3, 2), "f4"), np.array([0, 3]), (..., 4))
    assert read_columnar(array, 4).offsets.tolist() == [0, 3]


@pytest.mark.parametrize(
    ("selection", "shape"),
    [
        ((), (4, 5, 3)),
        ((1,), (5, 3)),
        ((slice(1, 3), 2), (2, 3)),
        ((..., 1), (4, 5)),
        ((0, ..., slice(1, 2)), (5, 1)),
        ((3, 4, 2), ()),
        ((slice(2, 2),), (0, 5, 3)),
        ((slice(-2, None), slice(1, 4), slice(0, 3)), (2, 3, 3)),
    ],
)
@pytest.mark.parametrize("order", ["C", "F"])
def test_reads_match_the_object_path(selection: Any, shape: tuple[int, ...], order: str) -> None:
    array = make({}, (4, 5, 3), (3, 2, 2), I16, order=order, zstd=True)
    cells = random_cells(I16, 60, seed=2)
    array[...] = object_array(cells, (4, 5, 3))
    array[1, 3:, :] = object_array([np.empty(0, "i2")] * 6, (2, 3))  # elided chunk parts
    col = read_columnar(array, selection)
    assert_same(col, *reference(array, selection))
    assert col.shape == shape and col.values.dtype == np.dtype("<i2")


def test_unwritten_chunks_read_as_fill_cells() -> None:
    fill = np.array([[1.5, -2.0]], dtype="float32")
    array = make({}, (3, 3), (2, 2), fill=fill)
    array[0, 0] = np.zeros((2, 2), "f4")
    col = read_columnar(array, (slice(None), slice(0, 2)))
    assert_same(col, *reference(array, (slice(None), slice(0, 2))))
    assert col.offsets.tolist() == [0, 2, 3, 4, 5, 6, 7]


def test_zero_d_arrays() -> None:
    ref_store, col_store = write_both((), (), [((), [np.ones((2, 2), "f4")])])
    assert objects(ref_store) == objects(col_store) != {}
    array = zarr.open_array(col_store, mode="r")
    col = read_columnar(array)
    assert col.shape == () and col.offsets.tolist() == [0, 2]
    assert col.values.tolist() == [[1.0, 1.0], [1.0, 1.0]]


# --------------------------------------------------------------------- byte identity


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("zstd", [False, True])
@pytest.mark.parametrize("write_empty_chunks", [False, True])
def test_writes_byte_identical_to_object_path(
    order: str, zstd: bool, write_empty_chunks: bool
) -> None:
    empty = np.empty((0, 2), "f4")
    writes: list[tuple[Any, list[np.ndarray]]] = [
        ((), random_cells(F32x2, 35, seed=3)),  # (5, 7) in (2, 3) chunks: partial edges
        ((slice(1, 4), slice(2, 6)), random_cells(F32x2, 12, seed=4)),
        ((slice(2, 4), slice(3, 6)), [empty] * 6),  # a whole chunk of fill cells
        ((4, slice(None)), [empty] * 7),  # the edge row of chunks
        ((..., 6), random_cells(F32x2, 5, seed=5)),  # the edge column
        ((4, 6), [np.ones((3, 2), "f4")]),
    ]
    kwargs = {"zstd": zstd, "write_empty_chunks": write_empty_chunks, "order": order}
    ref, col = write_both((5, 7), (2, 3), writes, **kwargs)
    assert objects(ref) == objects(col)
    assert ("c/1/1" in col) is write_empty_chunks


def test_elision_with_non_empty_fill_value_and_nan() -> None:
    fill = np.array([[np.nan, 1.0]], dtype="float32")
    same = fill.copy()
    other = np.array([[np.nan, 2.0]], dtype="float32")
    writes: list[tuple[Any, list[np.ndarray]]] = [
        ((), [same] * 16),
        ((slice(0, 2), slice(2, 4)), [same, other, same, same]),
    ]
    ref, col = write_both((4, 4), (2, 2), writes, fill=fill)
    assert objects(ref) == objects(col)
    assert set(col) == {"zarr.json", "c/0/1"}


def test_sharded_arrays_read_directly_and_write_like_zarr() -> None:
    shape, chunks, shards = (6, 7), (2, 2), (4, 4)
    writes: list[tuple[Any, list[np.ndarray]]] = [
        ((), random_cells(F32x2, 42, seed=6)),
        ((slice(1, 5), slice(3, 6)), random_cells(F32x2, 12, seed=7)),
        ((slice(0, 2), slice(0, 2)), [np.empty((0, 2), "f4")] * 4),  # an absent inner chunk
    ]
    ref, col = write_both(shape, chunks, writes, shards=shards, zstd=True)
    assert objects(ref) == objects(col)
    array = zarr.open_array(col, mode="r")
    for selection in [(), (slice(1, 6), slice(2, 7)), (0, 1), (..., 5)]:
        assert_same(read_columnar(array, selection), *reference(array, selection))


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("write_empty_chunks", [False, True])
def test_sharded_writes_are_direct_and_byte_identical(
    location: str, write_empty_chunks: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (7, 9) cells, shards of (4, 6), inner chunks of (2, 3): 2 x 2 inner chunks per shard in
    # Morton order; the last shards hang over the array's end, and inner chunk (3, 2) is past it.
    @contextmanager
    def no_cell_objects() -> Iterator[None]:  # the codec's object path fails in the writes
        with monkeypatch.context() as patch:
            for name in ("encode_chunk", "decode_chunk"):
                patch.setattr(VlenNDArrayCodec, name, lambda *a: pytest.fail("made cell objects"))
            yield

    empty = np.empty((0, 2), "f4")
    writes: list[tuple[Any, list[np.ndarray]]] = [
        ((), random_cells(F32x2, 63, seed=21)),
        ((slice(1, 6), slice(2, 8)), random_cells(F32x2, 30, seed=22)),  # inner chunks in part
        ((slice(0, 2), slice(0, 3)), [empty] * 6),  # one whole inner chunk of fill cells
        ((slice(4, 7), ...), [empty] * 27),  # the edge shards become all fill
        ((6, 8), random_cells(F32x2, 1, seed=23)),
    ]
    ref, col = write_both(
        (7, 9), (2, 3), writes, shards=(4, 6), index_location=location, zstd=True,
        write_empty_chunks=write_empty_chunks, check_each=True, guard=no_cell_objects,
    )  # fmt: skip
    assert objects(ref) == objects(col)


@pytest.mark.parametrize("location", ["start", "end"])
def test_sharded_reads_of_few_inner_chunks_use_byte_ranges(location: str) -> None:
    # 12 inner chunks per shard: reading one or two fetches the index and those chunks only.
    store: dict[str, Any] = {}
    array = make(store, (5, 9), (1, 2), I16, shards=(4, 6), index_location=location)
    cells = random_cells(I16, 45, seed=12)
    array[...] = object_array(cells, (5, 9))
    array[2, 2:4] = object_array([np.empty(0, "i2")] * 2, (2,))  # an absent inner chunk
    for selection in [(1, 3), (2, slice(1, 5)), (slice(3, 5), slice(5, 8)), (4, 8)]:
        assert_same(read_columnar(array, selection), *reference(array, selection))


def test_sharded_read_makes_no_cell_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    store: dict[str, Any] = {}
    array = make(store, (4, 4), (2, 2), shards=(4, 4))
    cells = random_cells(F32x2, 16, seed=8)
    array[...] = object_array(cells, (4, 4))
    monkeypatch.setattr(VlenNDArrayCodec, "decode_chunk", None)  # would fail if called
    assert_same(read_columnar(array), cells, (4, 4))


def test_chains_with_array_to_array_codecs_match_the_object_path() -> None:
    # A transposed chunk (F order on the wire) holds the cells of the write out of their order.
    writes: list[tuple[Any, list[np.ndarray]]] = [
        ((), random_cells(F32x2, 20, seed=9)),
        ((slice(1, 3), slice(1, 4)), random_cells(F32x2, 6, seed=10)),
    ]
    stores: list[dict[str, Any]] = [{}, {}]
    arrays = [
        zarr.create_array(
            store,
            shape=(4, 5),
            chunks=(3, 2),
            dtype=F32x2,
            serializer=VlenNDArrayCodec(),
            filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
            compressors=None,
        )
        for store in stores
    ]
    for selection, cells in writes:
        box = resolve(selection, (4, 5), "test")
        arrays[0][box.slices] = object_array(cells, box.extents)
        write_columnar(arrays[1], *columns(cells, F32x2), selection)
    assert objects(stores[0]) == objects(stores[1])
    for selection in [(), (2, slice(1, 4)), (1, 1)]:
        assert_same(read_columnar(arrays[1], selection), *reference(arrays[0], selection))


# ------------------------------------------------------------------------------- property


@st.composite
def boxes(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    items: list[Any] = []
    for n in shape:
        if draw(st.booleans()) and n:
            items.append(draw(st.integers(-n, n - 1)))
        else:
            a = draw(st.integers(0, n))
            items.append(slice(a, draw(st.integers(a, n))))
    return tuple(items)


@st.composite
def write_plans(draw: st.DrawFn) -> dict[str, Any]:
    ndim = draw(st.integers(2, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    dtype = draw(ndarray_dtypes(max_trailing=1))
    writes = []
    for _ in range(draw(st.integers(1, 3))):
        selection = draw(boxes(shape))
        count = math.prod(resolve(selection, shape, "t").extents)
        rng = np.random.default_rng(draw(st.integers(0, 2**31)))
        rows = draw(st.lists(st.integers(0, 2), min_size=count, max_size=count))
        writes.append((selection, [random_cell(rng, dtype, r) for r in rows]))
    return {
        "shape": shape, "chunks": chunks, "dtype": dtype, "writes": writes,
        "order": draw(st.sampled_from("CF")), "zstd": draw(st.booleans()),
        "write_empty_chunks": draw(st.booleans()), "read": draw(boxes(shape)),
    }  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(write_plans())
def test_property_columnar_equals_object_path(plan: dict[str, Any]) -> None:
    kwargs = {k: plan[k] for k in ("order", "zstd", "write_empty_chunks")}
    ref, col = write_both(plan["shape"], plan["chunks"], plan["writes"], plan["dtype"], **kwargs)
    assert objects(ref) == objects(col)
    array = zarr.open_array(col, mode="r")
    got = read_columnar(array, plan["read"])
    assert got.values.dtype == plan["dtype"].item_dtype
    assert_same(got, *reference(array, plan["read"]))


# ---------------------------------------------------------------------------------- errors


def test_bad_input_is_refused_before_anything_is_written() -> None:
    store: dict[str, Any] = {}
    array = make(store, (2, 3), (1, 2), NDArrayDType(dtype="int8", shape=(None,)))
    with pytest.raises(CellTypeError):
        write_columnar(array, np.array([1, 1000]), np.array([0, 1, 1, 1, 1, 1, 2]))
    with pytest.raises(ValueError, match="must have 7 entries for 6 cells"):
        write_columnar(array, np.array([1], "i1"), np.array([0, 1]), ...)
    with pytest.raises(ValueError, match="step 1"):
        read_columnar(array, (slice(None, None, 2), 0))
    with pytest.raises(IndexError, match="out of bounds for axis 1 of size 3"):
        read_columnar(array, (0, 3))
    with pytest.raises(IndexError, match="2 dimensions, got a selection of 3"):
        write_columnar(array, np.array([], "i1"), np.array([0, 0]), (0, 0, 0))
    assert objects(store) == {}


def test_corrupt_chunk_raises_the_codec_error_naming_it() -> None:
    store: dict[str, Any] = {}
    array = make(store, (2, 2), (1, 2))
    array[...] = object_array(random_cells(F32x2, 4, seed=11), (2, 2))
    store["c/1/0"] = store["c/1/0"].__class__.from_bytes(store["c/1/0"].to_bytes()[:-3])
    with pytest.raises(FramingError, match="'c/1/0'"):
        read_columnar(array, (1, slice(None)))
    assert read_columnar(array, 0).shape == (2,)


def test_threaded_decode_equals_sequential_and_names_the_first_corrupt_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store: dict[str, Any] = {}
    array = make(store, (4, 6), (2, 2))
    cells = random_cells(F32x2, 24, seed=13)
    array[...] = object_array(cells, (4, 6))
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 4)
    threaded = read_columnar(array, (slice(1, 4), slice(1, 6)))
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 1)
    sequential = read_columnar(array, (slice(1, 4), slice(1, 6)))
    assert threaded.values.tobytes() == sequential.values.tobytes()
    assert threaded.offsets.tolist() == sequential.offsets.tolist()
    for key in ("c/1/2", "c/1/1"):
        store[key] = store[key].__class__.from_bytes(store[key].to_bytes()[:-3])
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 4)
    with pytest.raises(FramingError, match="'c/1/1'"):
        read_columnar(array)


def test_rectilinear_grids_go_through_zarr() -> None:
    # zarr >= 3.2 has rectilinear chunk grids (experimental, off by default); zarr cuts them, and
    # a read takes the selection in one batch.
    v3 = pytest.importorskip("zarr.core.metadata.v3")
    if not hasattr(v3, "RectilinearChunkGridMetadata"):
        pytest.skip("this zarr release has no rectilinear chunk grids")
    dtype = NDArrayDType(dtype="int16", shape=(None,))
    with zarr.config.set({"array.rectilinear_chunks": True}):
        array = zarr.create_array(
            {}, shape=(10,), chunks=[[4, 6]], dtype=dtype, serializer=VlenNDArrayCodec()
        )
        write_columnar(array, np.arange(10, dtype="<i2"), np.arange(11))
        values, offsets = read_columnar(array, slice(2, 9))
    assert values.tolist() == list(range(2, 9)) and offsets.tolist() == list(range(8))


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("nd", [False, True], ids=["1-d", "2-d"])
def test_edge_chunks_after_a_shrinking_resize_follow_zarr(sharded: bool, nd: bool) -> None:
    # Cells past the end of an edge chunk survive a shrinking resize. zarr drops them when a
    # write covers the chunk up to the array's end, but keeps them inside a shard (it indexes the
    # whole shard there); the direct write must do the same, whatever the rank.
    shape, chunks, smaller, box = (
        ((2, 8), (2, 4), (2, 6), (slice(0, 2), slice(4, 6))) if nd else (8, 4, (6,), (slice(4, 6),))
    )
    shards = ((2, 8) if nd else 8) if sharded else None
    stores: list[dict[str, Any]] = [{}, {}]
    arrays = [make(store, shape, chunks, shards=shards) for store in stores]
    count = 16 if nd else 8
    for array in arrays:
        write_columnar(array, *columns(random_cells(F32x2, count, seed=31), F32x2))
        array.resize(smaller)
    new = random_cells(F32x2, 4 if nd else 2, seed=32)
    arrays[0][box] = object_array(new, (2, 2) if nd else (2,))
    write_columnar(arrays[1], *columns(new, F32x2), selection=box)
    assert objects(stores[0]) == objects(stores[1])


def test_a_corrupt_chunk_the_write_keeps_cells_of_stops_it_before_anything_is_stored() -> None:
    # 8 shards of 4 inner chunks per row of shards; the write covers the first row of shards
    # whole (32 inner chunks, more than one batch) before it reaches the corrupt one.
    store: dict[str, Any] = {}
    array = make(store, (4, 64), (2, 2), shards=(2, 8))
    write_columnar(array, *columns(random_cells(F32x2, 256, seed=33), F32x2))
    key = "c/1/0"
    blob = bytearray(store[key].to_bytes())
    blob[0:4] = (99).to_bytes(4, "little")  # inner chunk (1, 0) claims 99 cells, not 4
    store[key] = store[key].from_bytes(bytes(blob))
    before = objects(store)
    new = columns(random_cells(F32x2, 192, seed=34), F32x2)
    with pytest.raises(FramingError, match="inner chunk"):
        write_columnar(array, *new, (slice(0, 3), ...))  # rows 0-1 whole, row 2 in part
    assert objects(store) == before
