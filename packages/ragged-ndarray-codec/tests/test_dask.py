"""zarr_ndarray_dtype.dask with the ragged-ndarray codec: Dask arrays of cells with several
variable dimensions written block by block and read a block a task.

Every write is compared, object for object, with zarr's object path writing the same cells at
once (grids of rank 1, 2 and 3, plain and sharded, new arrays, existing ones and a region; a
``None`` cell is the fill cell, the codec's rule); reads with ``read_columnar``. On the threaded
scheduler, and on a ``distributed.LocalCluster`` of two spawned worker processes on 127.0.0.1
(every wait bounded). Skipped without dask (the cluster test without distributed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zrn_helpers import object_array, random_cell, random_shape, variable_patterns
from _zrn_support import local_cluster
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_ndarray_dtype import Columnar, NDArrayDType, read_columnar
from zarr_ndarray_dtype.dask import map_columnar, read_columnar_blocks, to_zarr
from zarr_ragged_ndarray import RaggedNDArrayCodec

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

F64_NN = NDArrayDType(dtype="float64", shape=(None, None))
# (shape, inner chunks, shards) for ranks 1, 2 and 3; no extent a multiple of its shard
GRIDS = {1: ((37,), (4,), (8,)), 2: ((11, 7), (2, 3), (4, 3)), 3: ((5, 4, 3), (2, 2, 1), (4, 2, 3))}
RESULT_S = 120  # every wait on the cluster


def cells_of(dtype: NDArrayDType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    cells = [random_cell(rng, dtype, random_shape(rng, dtype)) for _ in range(count)]
    return object_array(cells, shape)


def stored(store: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in store.items()}


def threads() -> Any:
    return dask.config.set(scheduler="threads")


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_to_zarr_stores_what_zarr_stores(rank: int, sharded: bool) -> None:
    shape, chunks, shards = GRIDS[rank]
    unit = shards if sharded else chunks
    layout: dict[str, Any] = {"chunks": chunks, "shards": shards if sharded else None}
    layout["compressors"] = zarr.codecs.ZstdCodec(level=1)
    cells = cells_of(F64_NN, shape, rank)
    cells[(0,) * rank] = None
    expected: dict[str, Any] = {}
    eager = zarr.create_array(expected, shape=shape, dtype=F64_NN, **layout)
    eager[...] = cells
    store: dict[str, Any] = {}
    with threads():
        array = to_zarr(da.from_array(cells, chunks=unit), store, dtype=F64_NN, **layout)
    assert stored(store) == stored(expected)

    region = (slice(unit[0], shape[0]), *(slice(None),) * (rank - 1))
    fresh = cells_of(F64_NN, eager[region].shape, rank + 10)
    with threads():
        to_zarr(da.from_array(fresh, chunks=unit), array, region=region)
    eager[region] = fresh
    assert stored(store) == stored(expected)


def test_none_cells_are_the_fill_cell() -> None:
    """The ragged codec writes ``None`` as the fill cell; cells equal to it are elided."""
    dtype = NDArrayDType(dtype="int32", shape=(2, None))
    fill = np.array([[1], [2]], np.int32)
    cells = cells_of(dtype, (8, 6), 5)
    cells[0, 3] = cells[7, 5] = None
    cells[:4, :3] = [[fill.copy()] * 3] * 4  # a whole chunk of fill cells: not stored
    layout = {"chunks": (4, 3), "fill_value": fill}
    expected: dict[str, Any] = {}
    zarr.create_array(expected, shape=(8, 6), dtype=dtype, **layout)[...] = cells
    store: dict[str, Any] = {}
    with threads():
        array = to_zarr(da.from_array(cells, chunks=(4, 3)), store, dtype=dtype, **layout)
    assert stored(store) == stored(expected)
    assert "c/0/0" not in store
    back = np.asarray(array[...])
    assert np.array_equal(back[0, 3], fill) and np.array_equal(back[7, 5], fill)


@settings(max_examples=25, deadline=None)
@given(variable_patterns(), st.integers(1, 3), st.integers(1, 3), st.booleans(), st.integers(0, 99))
def test_any_variable_pattern(
    pattern: tuple[int | None, ...], chunk: int, per: int, sharded: bool, seed: int
) -> None:
    dtype = NDArrayDType(dtype="int16", shape=pattern)
    unit = (chunk * per, chunk) if sharded else (chunk, chunk)
    # this codec for every pattern (a [null, d1..dk] one would default to vlen-ndarray, which
    # this package's tests may not have)
    layout = {
        "chunks": (chunk, chunk),
        "shards": unit if sharded else None,
        "serializer": RaggedNDArrayCodec(),
    }
    cells = cells_of(dtype, (2 * unit[0] + 1, unit[1] + 1), seed)
    expected: dict[str, Any] = {}
    zarr.create_array(expected, shape=cells.shape, dtype=dtype, **layout)[...] = cells
    store: dict[str, Any] = {}
    with threads():
        to_zarr(da.from_array(cells, chunks=unit), store, dtype=dtype, **layout)
    assert stored(store) == stored(expected)


def extents_sum(col: Columnar) -> np.ndarray:
    return col.shapes.sum(axis=1).reshape(col.shape)


def test_map_columnar_and_blocks_read_what_read_columnar_reads() -> None:
    array = zarr.create_array({}, dtype=F64_NN, shape=(11, 7), chunks=(2, 3), shards=(4, 3))
    array[...] = cells_of(F64_NN, (11, 7), 3)
    whole = read_columnar(array)
    with threads():
        sums = map_columnar(array, extents_sum, dtype="int64").compute()
        blocks = dask.compute(*read_columnar_blocks(array, chunks=(4, 7)).reshape(-1))
    np.testing.assert_array_equal(sums, whole.shapes.sum(axis=1).reshape(11, 7))
    # Blocks of whole rows: the whole read cut along the first axis.
    np.testing.assert_array_equal(np.concatenate([b.values for b in blocks]), whole.values)
    np.testing.assert_array_equal(np.concatenate([b.shapes for b in blocks]), whole.shapes)


@pytest.mark.slow
def test_write_and_read_on_a_local_cluster(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    cells = cells_of(F64_NN, (11, 7), 4)
    path = str(tmp_path / "ragged.zarr")
    layout = {"chunks": (2, 3), "shards": (4, 3)}
    with local_cluster() as client:
        lazy = to_zarr(da.from_array(cells, chunks=(4, 3)), path, dtype=F64_NN, compute=False,
                       **layout)  # fmt: skip
        array = client.compute(lazy).result(timeout=RESULT_S)
        grid = read_columnar_blocks(array)
        parts = [f.result(timeout=RESULT_S) for f in client.compute(list(grid.reshape(-1)))]
    expected: dict[str, Any] = {}
    zarr.create_array(expected, shape=(11, 7), dtype=F64_NN, **layout)[...] = cells
    assert {k: Path(path, k).read_bytes() for k in expected} == stored(expected)
    for part, index in zip(parts, np.ndindex(grid.shape), strict=True):
        box = tuple(slice(i * u, (i + 1) * u) for i, u in zip(index, (4, 3), strict=True))
        np.testing.assert_array_equal(part.values, read_columnar(array, box).values)
