"""Tests for zarr_ndarray_dtype.dask: ragged Dask arrays written block by block and read lazily.

The module is generic over the codec, so these tests use the toy codec of
``ndarray_dtype_testing`` (the real codecs: the codec packages' ``test_dask``). Every write is
compared with what zarr's object path leaves for the same cells written at once (the stored
objects byte for byte), every read with ``read_columnar`` of the whole array; on the threaded
scheduler, and at the end on a ``distributed.LocalCluster`` of two spawned worker processes on
127.0.0.1 (every wait bounded). Skipped without dask (the cluster tests without distributed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zdt_support import local_cluster, run_script, zarr_own_writes
from hypothesis import given, settings
from hypothesis import strategies as st
from ndarray_dtype_testing import ToyCodec, cell_sums, random_cells

from zarr_ndarray_dtype import BlockAlignmentError, CellError, Columnar, read_columnar
from zarr_ndarray_dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.dask import check_blocks, map_columnar, read_columnar_blocks, to_zarr

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

POINTS = NDArray(dtype="int16", shape=(None, 2))  # one variable axis
RAGGED = NDArray(dtype="float32", shape=(None, None))  # several
# (shape, inner chunks, shards) for ranks 1, 2 and 3; no extent a multiple of its shard
GRIDS = {
    1: ((23,), (4,), (8,)),
    2: ((9, 7), (2, 3), (4, 3)),
    3: ((5, 4, 3), (2, 2, 1), (4, 2, 3)),
}
RESULT_S = 120  # every wait on the cluster
SHARDS_AT_START = {"shape": (8, 6), "index_location": "start"}  # zarr's other spelling


@pytest.fixture(autouse=True)
def threads(request: pytest.FixtureRequest) -> Iterator[None]:
    """The threaded scheduler, but for tests on the cluster (whose client is the default)."""
    if "client" in request.fixturenames:
        yield
        return
    with dask.config.set(scheduler="threads"):
        yield


def layout(rank: int, sharded: bool) -> dict[str, Any]:
    shape, chunks, shards = GRIDS[rank]
    return {"shape": shape, "chunks": chunks, "shards": shards if sharded else None}


def blocks_of(grid: dict[str, Any]) -> tuple[int, ...]:
    """Dask blocks of two write units along the first axis, one along the others."""
    unit = grid["shards"] or grid["chunks"]
    return (2 * unit[0], *unit[1:])


def stored(store: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in store.items()}


def eager(cells: np.ndarray, dtype: NDArray, **create: Any) -> dict[str, bytes]:
    """The objects zarr's object path stores for ``cells`` written at once."""
    store: dict[str, Any] = {}
    array = zarr.create_array(store, shape=cells.shape, dtype=dtype, **create)
    with zarr_own_writes():
        array[...] = cells
    return stored(store)


def assert_cells(actual: Any, expected: np.ndarray) -> None:
    got = np.asarray(actual, dtype=object)
    assert got.shape == expected.shape
    for index in np.ndindex(expected.shape):
        assert got[index].shape == expected[index].shape, index
        assert got[index].tobytes() == expected[index].tobytes(), index


# ------------------------------------------------------------------------------- the rule


def test_the_package_imports_no_dask(tmp_path: Path) -> None:
    code = (
        "import sys, zarr_ndarray_dtype, zarr_ndarray_dtype.dask, zarr_ndarray_dtype.xarray\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed'}))\n"
    )
    assert run_script(code, tmp_path).stdout == "[]\n"


@pytest.mark.parametrize(
    ("blocks", "starts", "unit"),
    [
        (((8, 8, 7),), (0,), (8,)),  # the last block may end anywhere
        (((16, 7),), (0,), (8,)),  # blocks of several units
        (((3, 8, 2),), (5,), (8,)),  # a region off the grid: edges at 8 and 16
        (((4, 4), (6, 6, 1)), (0, 0), (4, 3)),
        (((5,),), (3,), (4,)),  # one block: no edge
    ],
)
def test_check_blocks_accepts_edges_on_the_grid(blocks: Any, starts: Any, unit: Any) -> None:
    check_blocks(blocks, starts, unit, "shard")


def test_check_blocks_names_the_value_the_rule_and_the_fix() -> None:
    with pytest.raises(BlockAlignmentError) as info:
        check_blocks(((8, 8), (5, 5, 5)), (0, 2), (8, 4), "chunk", what="here")
    text = str(info.value)
    assert text.startswith("here: dask blocks along axis 1 end at 7, inside a chunk (4 cells")
    assert "darr.rechunk({1: (2,) + (4,) * 3 + (1,)})" in text
    with pytest.raises(ValueError, match=r"along 'x' .* ds.chunk\({'x': 8}\)"):
        check_blocks(((4, 4),), (0,), (8,), "shard", keys=("x",), rechunk="ds.chunk")


def test_check_blocks_suggests_every_axis_at_once() -> None:
    """Blocks off the grid along two axes: one rechunk call fixes both (suggesting one axis
    at a time sends the user back for the next), and an axis already aligned is left out."""
    with pytest.raises(BlockAlignmentError) as info:
        check_blocks(
            ((32, 32), (8, 8), (32, 32)), (0, 0, 0), (64, 8, 64), "shard", keys=("y", "t", "x"),
            rechunk="ds.chunk",
        )  # fmt: skip
    text = str(info.value)
    assert "along 'y' end at 32, inside a shard (64 cells along it)" in text
    assert text.endswith("ds.chunk({'y': 64, 'x': 64})")
    fixed = eval(text.rsplit("ds.chunk(", 1)[1][:-1])
    blocks = tuple((fixed.get(k, 8),) * (64 // fixed.get(k, 8)) for k in ("y", "t", "x"))
    check_blocks(blocks, (0, 0, 0), (64, 8, 64), "shard")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.integers(0, 30), st.integers(1, 40), st.data())
def test_the_suggested_rechunk_is_aligned(size: int, start: int, extent: int, data: Any) -> None:
    """Whatever the blocks, the rechunk the message suggests passes the check and covers the
    same cells; and blocks are refused exactly when an edge falls inside a unit."""
    cuts = sorted(data.draw(st.sets(st.integers(1, extent - 1), max_size=4)) if extent > 1 else ())
    sizes = tuple(np.diff([0, *cuts, extent]).tolist())
    straddles = any((start + c) % size for c in cuts)
    try:
        check_blocks((sizes,), (start,), (size,), "shard")
    except BlockAlignmentError as exc:
        assert straddles
        spec = eval(str(exc).rsplit("darr.rechunk(", 1)[1][:-1])[0]
        fixed = (spec,) * -(-extent // spec) if isinstance(spec, int) else spec
        fixed = (*fixed[:-1], fixed[-1] - (sum(fixed) - extent))
        assert sum(fixed) == extent
        check_blocks((fixed,), (start,), (size,), "shard")
    else:
        assert not straddles


# ------------------------------------------------------------------------------ writing


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("dtype", [POINTS, RAGGED], ids=["one-variable", "two-variable"])
def test_a_new_array_stores_what_zarr_stores(rank: int, sharded: bool, dtype: NDArray) -> None:
    grid = layout(rank, sharded)
    cells = random_cells(rank, dtype, grid["shape"], empty=0.6)
    cells[(0,) * rank] = None  # the empty cell (the fill: elided like it)
    darr = da.from_array(cells, chunks=blocks_of(grid))
    store: dict[str, Any] = {}
    create = {"chunks": grid["chunks"], "shards": grid["shards"], "serializer": ToyCodec()}
    array = to_zarr(darr, store, dtype=dtype, **create)
    assert isinstance(array, zarr.Array)
    cells[(0,) * rank] = np.empty(dtype.pattern.empty_shape, dtype.item_dtype)
    assert stored(store) == eager(cells, dtype, **create)
    assert_cells(array[...], cells)


def test_chunks_default_to_the_blocks() -> None:
    cells = random_cells(1, POINTS, (10, 5))
    darr = da.from_array(cells, chunks=(4, 5))
    array = to_zarr(darr, {}, dtype=POINTS, serializer=ToyCodec(), name="points")
    assert array.chunks == (4, 5)
    assert array.path == "points"
    assert_cells(array[...], cells)


def test_fill_cells_and_unwritten_regions() -> None:
    """Cells equal to the fill are elided as zarr elides them; what no block writes reads as
    the fill cell; blocks wholly of fill cells store nothing."""
    fill = np.array([[7, 7]], np.int16)
    cells = random_cells(2, POINTS, (12, 4))
    cells[4:8] = [[fill] * 4] * 4  # a whole chunk of fill cells
    cells[0, 0] = fill.copy()
    create = {"chunks": (4, 4), "fill_value": fill, "serializer": ToyCodec()}
    store: dict[str, Any] = {}
    array = to_zarr(da.from_array(cells, chunks=(4, 4)), store, dtype=POINTS, **create)
    assert stored(store) == eager(cells, POINTS, **create)
    assert "c/1/0" not in store
    assert_cells(array[...], cells)

    part: dict[str, Any] = {}
    target = zarr.create_array(part, shape=(20, 4), dtype=POINTS, **create)
    to_zarr(da.from_array(cells[:8], chunks=(4, 4)), target, region=(slice(8, 16), slice(None)))
    back = np.asarray(target[...])
    assert_cells(back[8:16], cells[:8])
    assert all(np.array_equal(c, fill) for c in back[:8].ravel())
    assert all(np.array_equal(c, fill) for c in back[16:].ravel())


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_into_an_existing_array_and_a_region(rank: int, sharded: bool) -> None:
    grid = layout(rank, sharded)
    unit = grid["shards"] or grid["chunks"]
    create = {"chunks": grid["chunks"], "shards": grid["shards"], "serializer": ToyCodec()}
    store: dict[str, Any] = {}
    array = zarr.create_array(store, shape=grid["shape"], dtype=RAGGED, **create)
    cells = random_cells(rank + 10, RAGGED, grid["shape"])
    to_zarr(da.from_array(cells, chunks=blocks_of(grid)), array)
    assert stored(store) == eager(cells, RAGGED, **create)

    # A region starting off the grid: the first block ends on it, the others hold whole units.
    start = unit[0] - 1
    region = (slice(start, grid["shape"][0]), *(slice(None),) * (rank - 1))
    fresh = random_cells(rank + 20, RAGGED, cells[region].shape)
    first = (1, *((unit[0],) * ((fresh.shape[0] - 1) // unit[0])))
    sizes = (*first, fresh.shape[0] - sum(first)) if fresh.shape[0] > sum(first) else first
    darr = da.from_array(fresh, chunks=(sizes, *unit[1:]))
    assert to_zarr(darr, array, region=region) is array
    cells[region] = fresh
    assert stored(store) == eager(cells, RAGGED, **create)


@pytest.mark.parametrize(
    ("create", "blocks", "match"),
    [
        ({"chunks": (4, 3)}, (2, 3), "axis 0 end at 2, inside a chunk"),
        ({"chunks": (4, 3), "shards": (8, 6)}, (4, 3), "axis 0 end at 4, inside a shard"),
        ({"chunks": (4, 3), "shards": SHARDS_AT_START}, (8, 3), "axis 1 end at 3"),
        ({}, ((4, 2, 4, 2), 3), r"end at 6, inside a chunk \(4 cells"),  # irregular blocks
    ],
    ids=["chunk", "shard", "shard-mapping", "irregular"],
)
def test_misaligned_blocks_are_refused_before_anything_is_written(
    create: dict[str, Any], blocks: Any, match: str
) -> None:
    darr = da.from_array(random_cells(3, POINTS, (12, 6)), chunks=blocks)
    store: dict[str, Any] = {}
    with pytest.raises(BlockAlignmentError, match=match):
        to_zarr(darr, store, dtype=POINTS, serializer=ToyCodec(), **create)
    assert not store  # not even the array's metadata

    create.setdefault("chunks", (4, 3))
    array = zarr.create_array(store, shape=(12, 6), dtype=POINTS, serializer=ToyCodec(), **create)
    before = stored(store)
    with pytest.raises(BlockAlignmentError, match=match):
        to_zarr(darr, array)
    assert stored(store) == before


def test_refusals_name_the_value_and_the_fix() -> None:
    cells = random_cells(4, POINTS, (8,))
    darr = da.from_array(cells, chunks=4)
    array = zarr.create_array({}, shape=(8,), chunks=(4,), dtype=POINTS, serializer=ToyCodec())
    plain = zarr.create_array({}, shape=(8,), chunks=(4,), dtype="int16")
    cases: list[tuple[type[Exception], str, Any, Any, dict[str, Any]]] = [
        (TypeError, "dtype=NDArray", darr, {}, {}),
        (TypeError, "got dtype float64", da.zeros(8, chunks=4), {}, {"dtype": POINTS}),
        (ValueError, "compute_chunk_sizes", darr[darr.map_blocks(len) > 0], array, {}),
        (TypeError, r"\['dtype'\] describe a new array", darr, array, {"dtype": RAGGED}),
        (TypeError, "'ndarray' data type", darr, plain, {}),
        (TypeError, r"\['chunks', 'compr", darr, array, {"chunks": 4, "compressors": None}),
        (ValueError, "pass the array itself", darr, {}, {"dtype": POINTS, "region": slice(8)}),
        (ValueError, "does not fit region", darr, array, {"region": slice(0, 4)}),
        (ValueError, "divisible", darr, {}, {"dtype": POINTS, "chunks": (3,), "shards": (8,)}),
        (BlockAlignmentError, "inside a shard", darr, {}, {"dtype": POINTS, "shards": (8,)}),
    ]
    for case in cases[-2:]:  # arrays to create: the test serializer (no codec package here)
        case[4]["serializer"] = ToyCodec()
    for error, match, source, target, kwargs in cases:
        with pytest.raises(error, match=match):
            to_zarr(source, target, **kwargs)


@pytest.mark.parametrize(
    ("create", "blocks", "chunks", "shards"),
    [
        ({"shards": (8,)}, 8, (8,), (8,)),  # chunks: the Dask blocks
        ({"chunks": "auto"}, 16, (16,), None),
        ({"chunks": (4,), "shards": {"shape": (8,), "index_location": "start"}}, 8, (4,), (8,)),
        ({"chunks": 4}, 8, (4,), None),  # zarr 3.1 takes an int for chunks, unsharded only
    ],
)
def test_zarr_normalises_chunks_and_shards(
    create: dict[str, Any], blocks: int, chunks: Any, shards: Any
) -> None:
    cells = random_cells(4, POINTS, (16,))
    darr = da.from_array(cells, chunks=blocks)
    array = to_zarr(darr, {}, dtype=POINTS, serializer=ToyCodec(), **create)
    assert (array.chunks, array.shards) == (chunks, shards)
    assert_cells(array[...], cells)


def test_a_cell_that_does_not_fit_fails_its_block() -> None:
    cells = random_cells(5, POINTS, (8,))
    cells[6] = np.zeros((2, 3), np.int16)
    array = zarr.create_array({}, shape=(8,), chunks=(4,), dtype=POINTS, serializer=ToyCodec())
    with pytest.raises(CellError, match="does not match pattern"):
        to_zarr(da.from_array(cells, chunks=4), array)
    # The other block was written whole, or not at all when the failure came first.
    got = np.asarray(array[:4])
    assert all(c.size == 0 for c in got) or all(map(np.array_equal, got, cells[:4]))
    assert all(c.size == 0 for c in np.asarray(array[4:]))


def test_compute_false_writes_when_computed() -> None:
    cells = random_cells(6, RAGGED, (6, 6))
    store: dict[str, Any] = {}
    darr = da.from_array(cells, chunks=3)
    lazy = to_zarr(darr, store, dtype=RAGGED, serializer=ToyCodec(), compute=False)
    assert list(store) == ["zarr.json"]  # created, nothing written yet
    (array,) = dask.compute(lazy)
    assert_cells(array[...], cells)


@st.composite
def writes(draw: st.DrawFn) -> dict[str, Any]:
    rank = draw(st.integers(1, 3))
    chunks = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    sharded = draw(st.booleans())
    shards = tuple(c * draw(st.integers(1, 2)) for c in chunks) if sharded else None
    unit = shards or chunks
    shape = tuple(draw(st.integers(0, 3 * u + 1)) for u in unit)
    blocks = tuple(u * draw(st.integers(1, 2)) for u in unit)
    return {
        "dtype": draw(st.sampled_from([POINTS, RAGGED])),
        "shape": shape,
        "blocks": blocks,
        "create": {"chunks": chunks, "shards": shards, "serializer": ToyCodec()},
        "seed": draw(st.integers(0, 2**16)),
    }


@settings(max_examples=40, deadline=None)
@given(writes())
def test_writes_store_what_zarr_stores(case: dict[str, Any]) -> None:
    cells = random_cells(case["seed"], case["dtype"], case["shape"], empty=0.5)
    store: dict[str, Any] = {}
    darr = da.from_array(cells, chunks=case["blocks"])
    to_zarr(darr, store, dtype=case["dtype"], **case["create"])
    assert stored(store) == eager(cells, case["dtype"], **case["create"])


# ------------------------------------------------------------------------------ reading


def sharded_source(rank: int = 2) -> zarr.Array:
    grid = layout(rank, True)
    array = zarr.create_array({}, dtype=RAGGED, serializer=ToyCodec(), **grid)
    array[...] = random_cells(7, RAGGED, grid["shape"])
    return array


def concatenated(parts: list[Columnar], shape: tuple[int, ...]) -> Columnar:
    sizes = np.concatenate([np.diff(p.offsets) for p in parts])
    values = np.concatenate([p.values for p in parts])
    shapes = np.concatenate([p.shapes for p in parts])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return Columnar(parts[0].data_type, values, offsets, shapes, shape)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_columnar_blocks_are_the_whole_read_cut(rank: int) -> None:
    array = sharded_source(rank)
    grid = read_columnar_blocks(array)
    unit = array.shards
    assert grid.shape == tuple(-(-n // u) for n, u in zip(array.shape, unit, strict=True))
    blocks = np.empty(grid.shape, dtype=object)
    blocks.reshape(-1)[:] = dask.compute(*grid.reshape(-1))
    whole = read_columnar(array)
    for index in np.ndindex(grid.shape):
        box = tuple(slice(i * u, (i + 1) * u) for i, u in zip(index, unit, strict=True))
        part = read_columnar(array, box)
        got = blocks[index]
        assert got.shape == part.shape
        for name in ("values", "offsets", "shapes"):
            np.testing.assert_array_equal(getattr(got, name), getattr(part, name))
    # C order of the whole array, one axis at a time: rank 1 is the blocks end to end.
    if rank == 1:
        stitched = concatenated(list(blocks), whole.shape)
        for name in ("values", "offsets", "shapes"):
            np.testing.assert_array_equal(getattr(stitched, name), getattr(whole, name))


@pytest.mark.parametrize("chunks", [None, 3, (5, 2)])
def test_map_columnar_per_cell_results(chunks: Any) -> None:
    array = sharded_source()
    sums = map_columnar(array, cell_sums, dtype="float64", chunks=chunks)
    unit = array.shards if chunks is None else chunks
    assert sums.chunksize == ((unit, unit) if isinstance(unit, int) else tuple(unit))
    expected = cell_sums(read_columnar(array))
    np.testing.assert_array_equal(sums.compute(), expected)
    np.testing.assert_array_equal(sums[2:7, 1:].compute(), expected[2:7, 1:])
    assert float(sums.sum().compute()) == float(expected.sum())


def test_map_columnar_trailing_axes_and_a_wrong_result_shape() -> None:
    array = sharded_source()

    def extents(col: Columnar) -> np.ndarray:
        return col.shapes.reshape(*col.shape, 2)

    shapes = map_columnar(array, extents, dtype="int64", trailing=(2,))
    np.testing.assert_array_equal(shapes.compute(), read_columnar(array).shapes.reshape(9, 7, 2))
    flat = map_columnar(array, lambda col: col.shapes, dtype="int64", trailing=(2,))
    with pytest.raises(ValueError, match=r"fn returned shape \(\d+, 2\) for a block of \("):
        flat.compute()


def test_reads_refuse_other_data_types() -> None:
    plain = zarr.create_array({}, shape=(4,), chunks=(2,), dtype="int16")
    with pytest.raises(TypeError, match="map_columnar needs a zarr array of the 'ndarray'"):
        map_columnar(plain, cell_sums, dtype="float64")
    with pytest.raises(TypeError, match="read_columnar_blocks needs"):
        read_columnar_blocks(plain)


# ------------------------------------------------------------------------------ cluster


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two spawned single-threaded workers on 127.0.0.1, with the toy codec (and the block
    functions) imported from the uploaded ``ndarray_dtype_testing``."""
    pytest.importorskip("distributed")
    import ndarray_dtype_testing

    with local_cluster(ndarray_dtype_testing.__file__) as client:
        yield client


@pytest.mark.slow
def test_write_and_read_on_a_local_cluster(client: Any, tmp_path: Path) -> None:
    cells = random_cells(8, RAGGED, (9, 7))
    create = {"chunks": (2, 3), "shards": (4, 3), "serializer": ToyCodec()}
    darr = da.from_array(cells, chunks=(4, 3))
    lazy = to_zarr(darr, str(tmp_path / "a.zarr"), dtype=RAGGED, compute=False, **create)
    array = client.compute(lazy).result(timeout=RESULT_S)
    assert_cells(zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[...], cells)
    sums = client.compute(map_columnar(array, cell_sums, dtype="float64"))
    expected = cell_sums(read_columnar(array))
    np.testing.assert_array_equal(sums.result(timeout=RESULT_S), expected)
    blocks = client.compute(list(read_columnar_blocks(array).reshape(-1)))
    parts = [b.result(timeout=RESULT_S) for b in blocks]
    assert sum(int(p.offsets[-1]) for p in parts) == int(read_columnar(array).offsets[-1])


@pytest.mark.slow
def test_a_memory_store_is_refused_on_a_cluster(client: Any) -> None:
    """A worker gets its own copy of a MemoryStore: its writes would be lost silently."""
    cells = random_cells(9, POINTS, (8,))
    store: dict[str, Any] = {}
    darr = da.from_array(cells, chunks=4)
    lazy = to_zarr(darr, store, dtype=POINTS, serializer=ToyCodec(), compute=False)
    with pytest.raises(ValueError, match=r"copy of a zarr\.storage\.MemoryStore loses what"):
        client.compute(lazy).result(timeout=RESULT_S)
    assert list(store) == ["zarr.json"]
