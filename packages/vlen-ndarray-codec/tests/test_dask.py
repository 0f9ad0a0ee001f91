"""Scale-out on Dask: ``ndarray`` arrays through ``dask.array`` on threads and on a local cluster.

Skipped when dask or distributed is not installed. What is checked:

- the data type, the codec and a whole zarr array pickle and unpickle (what every Dask scheduler
  that leaves the process does), and unpickling in a fresh interpreter imports and registers our
  packages as a side effect, so worker processes need no set-up;
- ``dask.array.from_zarr`` computes per-cell extents and per-cell means chunk-parallel, equal to
  the same computation over ``array[:]``, with the threaded scheduler and with a
  ``distributed.LocalCluster`` of two single-threaded worker processes on loopback;
- ``dask.array.store`` of object-dtype Dask arrays into a pre-created ``ndarray`` array writes
  every cell back, plain and sharded, on both schedulers;
- ``zarr_ndarray_dtype.dask``: ``to_zarr`` of vlen cells on grids of rank 1, 2 and 3 (new arrays,
  existing ones and a region) stores what zarr's object path stores, ``map_columnar`` computes
  per-cell means with no Python object per cell, on both schedulers.
"""

from __future__ import annotations

import pickle
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zvn_helpers import run_fresh
from _zvn_support import local_cluster
from zarr.codecs import ZstdCodec
from zvn_dask_blocks import (
    OURS,
    block_extents,
    block_means,
    block_sorted,
    cell_extents,
    columnar_means,
    our_modules_loaded,
)

from zarr_ndarray_dtype.dask import map_columnar, to_zarr
from zarr_vlen_ndarray import NDArrayDType, VlenNDArrayCodec

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

ELEMENT = NDArrayDType(dtype="float32", shape=(None, 2))
CELLS = 203  # not a multiple of any chunk size below: the last chunk is partial
UNWRITTEN = slice(160, 176)  # one inner chunk (and half a shard) never written: fill cells

# Bounds for everything that talks to the cluster, so that a broken worker fails the test
# instead of hanging the CI job.
CLUSTER_START_S = 60
RESULT_S = 120


# --------------------------------------------------------------------------------- fixtures


def random_cells(seed: int, count: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    extents = rng.integers(0, 9, size=count)
    extents[::17] = 0  # empty cells in several chunks
    cells = np.empty(count, dtype=object)
    for i, n in enumerate(extents):
        cells[i] = rng.normal(size=(int(n), 2)).astype(np.float32)
    return cells


def create(path: Path, *, sharded: bool) -> zarr.Array:
    layout: dict[str, Any] = {"chunks": (16,), "shards": (32,)} if sharded else {"chunks": (16,)}
    dtype: Any = ELEMENT  # zarr's annotation names its own ZDType parameters
    return zarr.create_array(
        store=str(path),
        shape=(CELLS,),
        dtype=dtype,
        compressors=ZstdCodec(level=3),
        dimension_names=("cell",),
        **layout,
    )


@pytest.fixture(params=[False, True], ids=["chunked", "sharded"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> zarr.Array:
    """A float32 (None, 2) array on disk: random cells, some empty, one region left unwritten."""
    arr = create(tmp_path / "source.zarr", sharded=request.param)
    cells = random_cells(7, CELLS)
    arr[: UNWRITTEN.start] = cells[: UNWRITTEN.start]
    arr[UNWRITTEN.stop :] = cells[UNWRITTEN.stop :]
    return arr


def target_like(source: zarr.Array, path: Path) -> zarr.Array:
    return create(path, sharded=source.shards is not None)


def write_chunks(arr: zarr.Array) -> tuple[int, ...]:
    """The chunking a Dask array must have to write ``arr`` without locks: whole shards."""
    return arr.shards if arr.shards is not None else arr.chunks


def read(arr: zarr.Array, selection: slice = slice(None)) -> np.ndarray:
    """Cells of ``arr`` through zarr's object-array path, as an ndarray for the type checker."""
    return np.asarray(arr[selection])


def expected_extents(cells: np.ndarray) -> np.ndarray:
    return np.array([c.shape[0] for c in cells], dtype=np.int64)


def expected_means(cells: np.ndarray) -> np.ndarray:
    means = np.full((cells.size, 2), np.nan)
    for i, c in enumerate(cells):
        if c.shape[0]:
            means[i] = np.asarray(c, dtype=np.float64).mean(axis=0)
    return means


def assert_same_cells(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a.dtype == e.dtype, f"cell {i}"
        np.testing.assert_array_equal(a, e, err_msg=f"cell {i}")


# ----------------------------------------------------------------------------------- pickle


def test_dtype_codec_and_array_pickle(source: zarr.Array) -> None:
    for obj in (ELEMENT, VlenNDArrayCodec()):
        again = pickle.loads(pickle.dumps(obj))
        assert again == obj
        assert type(again) is type(obj)
    again = pickle.loads(pickle.dumps(source))
    assert again.metadata == source.metadata
    assert_same_cells(read(again), read(source))


def test_unpickling_in_a_fresh_interpreter_registers_the_type(
    source: zarr.Array, tmp_path: Path
) -> None:
    """What a spawned Dask worker does: unpickle the array with none of our packages imported."""
    pickled = tmp_path / "array.pickle"
    pickled.write_bytes(pickle.dumps(source))
    script = textwrap.dedent(
        """
        import json, pickle, sys
        ours = ("zarr_ndarray_dtype", "zarr_vlen_ndarray")  # the same as OURS
        before = [m for m in ours if m in sys.modules]
        with open(sys.argv[1], "rb") as f:
            arr = pickle.load(f)
        extents = [int(c.shape[0]) for c in arr[:]]
        after = [m for m in ours if m in sys.modules]
        print(json.dumps({"before": before, "after": after, "extents": extents}))
        """
    )
    report = run_fresh(script, str(pickled), timeout=RESULT_S)
    assert report["before"] == []
    assert report["after"] == list(OURS)
    assert report["extents"] == expected_extents(read(source)).tolist()


# --------------------------------------------------------------------------- threaded runs


def test_from_zarr_matches_the_array(source: zarr.Array) -> None:
    x = da.from_zarr(source)
    assert x.dtype == np.dtype(object)
    assert x.shape == source.shape
    assert x.numblocks == (-(-CELLS // source.chunks[0]),)
    assert_same_cells(x.compute(scheduler="threads"), read(source))


def test_per_cell_extents_and_means_threaded(source: zarr.Array) -> None:
    x = da.from_zarr(source)
    extents = x.map_blocks(block_extents, dtype=np.int64)
    means = x.map_blocks(block_means, dtype=np.float64, new_axis=1, chunks=(x.chunks[0], (2,)))
    got_extents, got_means = da.compute(extents, means, scheduler="threads")
    cells = read(source)
    np.testing.assert_array_equal(got_extents, expected_extents(cells))
    np.testing.assert_array_equal(got_extents[UNWRITTEN], 0)
    np.testing.assert_allclose(got_means, expected_means(cells), rtol=1e-12, equal_nan=True)
    # A reduction over the per-cell results stays lazy until the end.
    total = extents.sum().compute(scheduler="threads")
    assert total == expected_extents(cells).sum()


def test_store_derived_cells_threaded(source: zarr.Array, tmp_path: Path) -> None:
    target = target_like(source, tmp_path / "sorted.zarr")
    x = da.from_zarr(source).rechunk(write_chunks(target))
    sorted_cells = x.map_blocks(block_sorted, dtype=object)
    da.store(sorted_cells, target, lock=False, scheduler="threads")
    assert_same_cells(read(target), block_sorted(read(source)))


def test_store_object_array_from_memory_threaded(tmp_path: Path) -> None:
    """An object-dtype Dask array built from in-memory cells lands in an empty array."""
    target = create(tmp_path / "from-memory.zarr", sharded=True)
    cells = random_cells(11, CELLS)
    x = da.from_array(cells, chunks=write_chunks(target))
    assert x.dtype == np.dtype(object)
    da.store(x, target, lock=False, scheduler="threads")
    assert_same_cells(read(target), cells)


def test_dask_s_own_to_zarr_with_the_data_type(tmp_path: Path) -> None:
    """``dask.array.to_zarr(..., dtype=NDArrayDType(...))`` creates an ``ndarray`` array and
    writes the cells (dask releases whose ``to_zarr`` hands ``dtype=`` on to zarr)."""
    cells = random_cells(5, 64)
    try:
        da.to_zarr(da.from_array(cells, chunks=16), str(tmp_path / "a.zarr"), dtype=ELEMENT)
    except TypeError as exc:  # older dask passes its own dtype (object) too
        pytest.skip(f"dask {dask.__version__}'s to_zarr takes no dtype= ({exc})")
    array = zarr.open_array(tmp_path / "a.zarr", mode="r")
    assert array.metadata.data_type == ELEMENT
    assert_same_cells(array[:], cells)


def test_store_into_a_region(source: zarr.Array, tmp_path: Path) -> None:
    """``regions=`` writes part of the target; the rest keeps reading as empty fill cells."""
    target = target_like(source, tmp_path / "region.zarr")
    part = slice(64, 128)  # whole shards and chunks in both layouts
    x = da.from_zarr(source)[part].rechunk(write_chunks(target))
    da.store(x, target, regions=(part,), lock=False, scheduler="threads")
    got = read(target)
    assert_same_cells(got[part], read(source, part))
    assert expected_extents(got[: part.start]).sum() == 0
    assert expected_extents(got[part.stop :]).sum() == 0


# -------------------------------------------------------- zarr_ndarray_dtype.dask, threaded

# (shape, inner chunks, shards) for ranks 1, 2 and 3; no extent a multiple of its shard
GRIDS = {
    1: ((203,), (16,), (32,)),
    2: ((19, 13), (4, 3), (8, 6)),
    3: ((9, 5, 4), (2, 2, 2), (4, 4, 2)),
}


def grid_cells(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return random_cells(seed, int(np.prod(shape))).reshape(shape)


def stored(store: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in store.items()}


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_to_zarr_stores_what_zarr_stores(rank: int, sharded: bool) -> None:
    """A new array, then a region of it, each equal to zarr's object path writing the same."""
    shape, chunks, shards = GRIDS[rank]
    unit = shards if sharded else chunks
    layout: dict[str, Any] = {"chunks": chunks, "shards": shards if sharded else None}
    layout["compressors"] = ZstdCodec(level=3)
    cells = grid_cells(rank, shape)
    cells[(0,) * rank] = None  # the empty cell
    expected: dict[str, Any] = {}
    eager = zarr.create_array(expected, shape=shape, dtype=ELEMENT, **layout)
    eager[...] = cells
    store: dict[str, Any] = {}
    with dask.config.set(scheduler="threads"):
        array = to_zarr(da.from_array(cells, chunks=unit), store, dtype=ELEMENT, **layout)
        assert stored(store) == stored(expected)

        region = (slice(unit[0], shape[0]), *(slice(None),) * (rank - 1))
        fresh = da.from_array(grid_cells(rank + 10, eager[region].shape), chunks=unit)
        to_zarr(fresh.map_blocks(block_sorted, dtype=object), array, region=region)
    eager[region] = block_sorted(fresh.compute(scheduler="threads"))
    assert stored(store) == stored(expected)


def test_map_columnar_means_threaded(source: zarr.Array) -> None:
    means = map_columnar(source, columnar_means, dtype=np.float64, trailing=(2,))
    assert means.chunks[0][0] == write_chunks(source)[0]
    got = means.compute(scheduler="threads")
    np.testing.assert_allclose(got, expected_means(read(source)), rtol=1e-12, equal_nan=True)


# ---------------------------------------------------------------------------- the cluster


@dataclass
class Cluster:
    client: Any
    loaded_at_start: dict[str, list[str]]  # worker address -> our packages imported at start


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Two single-threaded spawned worker processes on loopback; always torn down."""
    import zvn_dask_blocks

    # Workers cannot import the tests' folder: ship the block functions' module to them (it
    # imports only numpy, so the check below still sees a worker without our code).
    with local_cluster(zvn_dask_blocks.__file__, timeout=CLUSTER_START_S) as client:
        yield Cluster(client, client.run(our_modules_loaded))


@pytest.mark.slow
def test_each_worker_registers_the_type_when_it_unpickles_an_array(
    cluster: Cluster, source: zarr.Array
) -> None:
    workers = sorted(cluster.loaded_at_start)
    assert len(workers) == 2
    # Spawned workers start without our packages: nothing was pre-imported for them.
    assert all(mods == [] for mods in cluster.loaded_at_start.values())
    futures = [
        cluster.client.submit(
            cell_extents, source, workers=[w], allow_other_workers=False, pure=False
        )
        for w in workers
    ]
    expected = expected_extents(read(source)).tolist()
    for future in futures:
        assert future.result(timeout=RESULT_S) == expected
    loaded = cluster.client.run(our_modules_loaded)
    assert loaded == {w: list(OURS) for w in workers}


@pytest.mark.slow
def test_per_cell_extents_and_means_on_a_local_cluster(
    cluster: Cluster, source: zarr.Array
) -> None:
    x = da.from_zarr(source)
    extents = x.map_blocks(block_extents, dtype=np.int64)
    means = x.map_blocks(block_means, dtype=np.float64, new_axis=1, chunks=(x.chunks[0], (2,)))
    got_extents, got_means = cluster.client.compute([extents, means])
    cells = read(source)
    np.testing.assert_array_equal(got_extents.result(timeout=RESULT_S), expected_extents(cells))
    np.testing.assert_allclose(
        got_means.result(timeout=RESULT_S), expected_means(cells), rtol=1e-12, equal_nan=True
    )


@pytest.mark.slow
def test_store_derived_cells_on_a_local_cluster(
    cluster: Cluster, source: zarr.Array, tmp_path: Path
) -> None:
    target = target_like(source, tmp_path / "sorted.zarr")
    x = da.from_zarr(source).rechunk(write_chunks(target))
    stored = da.store(x.map_blocks(block_sorted, dtype=object), target, lock=False, compute=False)
    cluster.client.compute(stored).result(timeout=RESULT_S)
    assert_same_cells(read(zarr.open_array(target.store, mode="r")), block_sorted(read(source)))


@pytest.mark.slow
def test_to_zarr_and_map_columnar_on_a_local_cluster(
    cluster: Cluster, source: zarr.Array, tmp_path: Path
) -> None:
    path = str(tmp_path / "written.zarr")
    layout = {"chunks": source.chunks, "shards": source.shards, "compressors": ZstdCodec(level=3)}
    x = da.from_zarr(source).rechunk(write_chunks(source)).map_blocks(block_sorted, dtype=object)
    lazy = to_zarr(x, path, dtype=ELEMENT, compute=False, **layout)
    written = cluster.client.compute(lazy).result(timeout=RESULT_S)
    assert_same_cells(read(zarr.open_array(path, mode="r")), block_sorted(read(source)))
    means = map_columnar(written, columnar_means, dtype=np.float64, trailing=(2,))
    got = cluster.client.compute(means).result(timeout=RESULT_S)
    expected = expected_means(block_sorted(read(source)))
    np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)
