"""nd_arrow.zarr_bridge.table_from_zarr / table_to_zarr: row-aligned arrays as one table, as
zagg stores them (t-digest centroids with their locations and times, per cell), both forms.

Skipped where zarr or zarr-vlen-ndarray is missing (the nd_arrow sessions run without zarr).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

zarr = pytest.importorskip("zarr")
zvn = pytest.importorskip("zarr_vlen_ndarray")

import zarr_ndarray_dtype  # noqa: E402
from nd_arrow import InvalidArgumentError, NdColumn, NdType  # noqa: E402
from nd_arrow.zarr_bridge import table_from_zarr, table_to_zarr  # noqa: E402
from zarr_ndarray_dtype import AlignmentError, NDArrayDType  # noqa: E402

N = 10
SIZES = [3, 0, 2, 1, 0, 0, 4, 2, 1, 3]  # cells 4 and 5: an all-empty chunk
NAMES = ["centroids", "centroids_locations", "centroids_times", "count"]


def zagg_group(sizes: list[int] = SIZES, shape: tuple[int, ...] = (N,)) -> tuple[Any, dict]:
    """A group as zagg writes it (sharded, cells (n, 2) float32 and (n,) uint64 twice, plus a
    plain int32 array), and its cells by array name."""
    group = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    ones = (1,) * (len(shape) - 1)
    chunks, shards = (*ones, 2), (*ones, 4)
    common = dict(shape=shape, chunks=chunks, shards=shards, compressors=None)
    serializer = zvn.VlenNDArrayCodec()
    float2, ints = NDArrayDType(dtype="float32", shape=(None, 2)), NDArrayDType(dtype="uint64")
    group.create_array("centroids", dtype=float2, serializer=serializer, **common)
    group.create_array("centroids_locations", dtype=ints, serializer=serializer, **common)
    group.create_array("centroids_times", dtype=ints, serializer=serializer, **common)
    group.create_array("count", dtype="int32", shape=shape, chunks=chunks)
    rng = np.random.default_rng(1)
    start = np.cumsum([0, *sizes])
    cells = {
        "centroids": [rng.random((k, 2), dtype=np.float32) for k in sizes],
        "centroids_locations": [
            np.arange(a, b, dtype=np.uint64) for a, b in itertools.pairwise(start)
        ],
        "centroids_times": [
            1000 + np.arange(a, b, dtype=np.uint64) for a, b in itertools.pairwise(start)
        ],
        "count": np.array(sizes, np.int32),
    }
    for name, values in cells.items():
        staged = np.empty(len(values), object)
        staged[:] = list(values)
        group[name][...] = staged.reshape(shape) if name != "count" else np.reshape(values, shape)
    return group, cells


def empty_like(group: Any) -> Any:
    out = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    for name, a in group.arrays():
        kw = dict(serializer=zvn.VlenNDArrayCodec(), shards=a.shards) if name != "count" else {}
        out.create_array(name, dtype=a.metadata.data_type, shape=a.shape, chunks=a.chunks, **kw)
    return out


def test_one_row_per_cell_with_the_values_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    group, cells = zagg_group()
    read: dict[str, Any] = {}
    read_aligned = zarr_ndarray_dtype.read_aligned

    def recording(*args: Any) -> Any:
        read.update(out := read_aligned(*args))
        return out

    monkeypatch.setattr(zarr_ndarray_dtype, "read_aligned", recording)
    table = table_from_zarr(group)
    assert table.column_names == NAMES and table.num_rows == N
    for name in NAMES[:3]:
        assert isinstance(table.schema.field(name).type, NdType)
    assert table.schema.field("centroids").type.value_type == pa.float32()
    assert table.schema.field("centroids_times").type.value_type == pa.uint64()
    assert table.schema.field("count").type == pa.int32()
    assert table.column("count").to_pylist() == SIZES
    for name in NAMES[:3]:
        column = NdColumn.from_arrow(table.column(name))  # checks every rule of the format
        for row, cell in zip(column.to_numpy_list(), cells[name], strict=True):
            assert np.array_equal(row, cell) and row.shape == cell.shape
        values = table.column(name).chunk(0).storage.field("values").values
        shared = np.frombuffer(values.buffers()[1], read[name].values.dtype)
        assert np.shares_memory(shared, read[name].values)  # zero copies


def test_exploded_one_row_per_leading_row() -> None:
    group, cells = zagg_group()
    table = table_from_zarr(group, explode=True)
    assert table.schema == pa.schema(
        [
            ("cell", pa.int64()),
            ("centroids", pa.list_(pa.float32(), 2)),
            ("centroids_locations", pa.uint64()),
            ("centroids_times", pa.uint64()),
            ("count", pa.int32()),
        ]
    )
    assert table.num_rows == sum(SIZES)
    assert table.column("cell").to_pylist() == np.repeat(np.arange(N), SIZES).tolist()
    centroids = table.column("centroids").combine_chunks()
    flat = np.asarray(centroids.values).reshape(-1, 2)
    assert np.array_equal(flat, np.concatenate(cells["centroids"]))
    times = np.concatenate(cells["centroids_times"])
    assert table.column("centroids_times").to_pylist() == times.tolist()
    assert table.column("count").to_pylist() == np.repeat(SIZES, SIZES).tolist()


@pytest.mark.slow
def test_the_exploded_table_of_a_million_cells() -> None:
    """A 1,048,576-cell group as zagg shards it: one row per leading row, in C order of cells."""
    from zarr_ndarray_dtype import write_aligned

    group = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    grid = dict(shape=(1024, 1024), chunks=(128, 128), shards=(512, 512))
    group.create_array("centroids", dtype=NDArrayDType(dtype="float32", shape=(None, 2)), **grid)
    group.create_array("centroids_times", dtype=NDArrayDType(dtype="uint64"), **grid)
    sizes = np.random.default_rng(2).poisson(2, 1 << 20)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    rows = int(offsets[-1])
    times = np.arange(rows, dtype=np.uint64)
    columns = {"centroids": np.ones((rows, 2), np.float32), "centroids_times": times}
    write_aligned(group, columns, offsets)
    table = table_from_zarr(group, explode=True)
    assert table.num_rows == rows
    cell = table.column("cell").to_numpy()
    assert np.array_equal(cell, np.repeat(np.arange(1 << 20), sizes))
    assert np.array_equal(table.column("centroids_times").to_numpy(), times)


def test_exploded_nests_fixed_size_lists_for_more_trailing_axes() -> None:
    arrays = {
        "a": zarr.create_array(
            {}, shape=(2,), chunks=(1,), dtype=NDArrayDType("int16", (None, 2, 3))
        ),
        "b": zarr.create_array({}, shape=(2,), chunks=(1,), dtype=NDArrayDType("int16", (None, 1))),
    }
    cells = [np.arange(6, dtype=np.int16).reshape(1, 2, 3), np.zeros((2, 2, 3), np.int16)]
    for name, trailing in (("a", (2, 3)), ("b", (1,))):
        staged = np.empty(2, object)
        staged[:] = [np.resize(c, (len(c), *trailing)).astype(np.int16) for c in cells]
        arrays[name][:] = staged
    table = table_from_zarr(arrays, explode=True)
    assert table.schema.field("a").type == pa.list_(pa.list_(pa.int16(), 3), 2)
    assert table.schema.field("b").type == pa.list_(pa.int16(), 1)
    assert table.column("a").to_pylist()[0] == [[0, 1, 2], [3, 4, 5]]
    assert table.column("b").to_pylist() == [[0], [0], [0]]
    assert table.column("cell").to_pylist() == [0, 1, 1]


def test_a_selection_of_a_2d_group_in_c_order() -> None:
    sizes = [1, 2, 0, 3, 1, 0, 2, 2, 1, 0, 0, 1]
    group, cells = zagg_group(sizes, shape=(3, 4))
    table = table_from_zarr(group, (slice(1, 3), slice(1, 4)))
    picked = [5, 6, 7, 9, 10, 11]  # the flat indices of the array, in C order
    assert table.column("count").to_pylist() == [sizes[i] for i in picked]
    rows = NdColumn.from_arrow(table.column("centroids_times")).to_numpy_list()
    assert all(
        np.array_equal(r, cells["centroids_times"][i]) for r, i in zip(rows, picked, strict=True)
    )
    exploded = table_from_zarr(group, (slice(1, 3), slice(1, 4)), explode=True)
    counts = [sizes[i] for i in picked]
    assert exploded.column("cell").to_pylist() == np.repeat(np.arange(6), counts).tolist()
    one = table_from_zarr(group, (2, slice(0, 2)))
    assert one.column("count").to_pylist() == [sizes[8], sizes[9]]


def test_a_misaligned_cell_is_refused_in_both_forms_with_its_coordinates() -> None:
    group, _ = zagg_group()
    staged = np.empty(1, object)
    staged[0] = np.arange(5, dtype=np.uint64)  # cell 7 holds 2 rows in the other arrays
    group["centroids_times"][7:8] = staged  # the last cell of the second shard
    for explode in (False, True):
        with pytest.raises(AlignmentError, match=r"cell \(7,\).*'centroids_times': 5 rows"):
            table_from_zarr(group, explode=explode)
    assert table_from_zarr(group, slice(0, 7)).num_rows == 7  # the cells before it align


def test_arrays_of_another_shape_are_refused_naming_the_shapes() -> None:
    group, _ = zagg_group()
    group.create_array("other", dtype="int32", shape=(N + 1,), chunks=(2,))
    with pytest.raises(AlignmentError, match=r"\(10,\).*'other': \(11,\)"):
        table_from_zarr(group)
    table = table_from_zarr({"c": group["centroids"]}).append_column("other", pa.array(range(N)))
    with pytest.raises(AlignmentError, match=r"\(10,\).*'other': \(11,\)"):
        table_to_zarr(table.rename_columns(["centroids", "other"]), group)
    arrays = {k: group[k] for k in NAMES[:2]} | {"x": zagg_group(shape=(2, 5))[0]["centroids"]}
    with pytest.raises(AlignmentError, match="different shapes"):
        table_from_zarr(arrays)


def test_an_exploded_table_has_no_room_for_an_array_named_cell() -> None:
    group, _ = zagg_group()
    arrays = {"cell": group["count"], "centroids": group["centroids"]}
    assert table_from_zarr(arrays).column_names == ["cell", "centroids"]
    with pytest.raises(InvalidArgumentError, match="named 'cell'"):
        table_from_zarr(arrays, explode=True)


def test_round_trip_and_a_region() -> None:
    group, _ = zagg_group()
    table = table_from_zarr(group)
    out = empty_like(group)
    table_to_zarr(table, out)
    assert table_from_zarr(out).equals(table)
    for name in NAMES:  # the chunks equal those zarr wrote for the same cells
        a, b = group[name], out[name]
        assert all(
            np.array_equal(x, y) for x, y in zip(a[...].ravel(), b[...].ravel(), strict=True)
        )
    region = empty_like(group)
    table_to_zarr(table_from_zarr(group, slice(2, 8)), region, slice(2, 8))
    assert table_from_zarr(region, slice(2, 8)).equals(table_from_zarr(group, slice(2, 8)))
    assert table_from_zarr(region, slice(0, 2)).column("count").to_pylist() == [0, 0]


def test_table_to_zarr_writes_only_the_named_arrays() -> None:
    group, _ = zagg_group()
    out = empty_like(group)
    table_to_zarr(table_from_zarr(group).select(["centroids_times"]), out)
    assert (
        table_from_zarr({"t": out["centroids_times"]})
        .column("t")
        .equals(table_from_zarr(group).column("centroids_times"))
    )
    assert not any(len(c) for c in out["centroids"][...])  # untouched: the fill cells


def written(group: Any) -> list[str]:
    return sorted(k for k in group.store._store_dict if not k.endswith("zarr.json"))


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda t: t.append_column("other", pa.array(range(N))), InvalidArgumentError,
         r"no array named \['other'\]"),
        (lambda t: t.set_column(3, "count", pa.array(np.arange(N) + 0.5)), InvalidArgumentError,
         "'count' has values that do not convert without loss to the array's dtype int32"),
        (lambda t: t.set_column(3, "count", pa.array([None] * N, pa.int32())),
         InvalidArgumentError, "'count' has null values"),
    ],
)  # fmt: skip
def test_table_to_zarr_refuses_before_writing_anything(
    change: Any, error: Any, message: str
) -> None:
    group, _ = zagg_group()
    out = empty_like(group)
    with pytest.raises(error, match=message):
        table_to_zarr(change(table_from_zarr(group)), out)
    assert written(out) == []


def test_table_to_zarr_refuses_rows_that_do_not_align() -> None:
    group, _ = zagg_group()
    table = table_from_zarr(group)
    other = zagg_group([*SIZES[:7], 3, *SIZES[8:]])[0]
    table = table.set_column(2, "centroids_times", table_from_zarr(other).column("centroids_times"))
    out = empty_like(group)
    with pytest.raises(AlignmentError, match="row 7 has 3 rows in column 'centroids_times' but 2"):
        table_to_zarr(table, out)
    assert written(out) == []


def test_duckdb_and_polars_query_the_exploded_table() -> None:
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    group, cells = zagg_group()
    flat = table_from_zarr(group, explode=True).rename_columns(
        ["cell", "centroid", "location", "time", "count"]
    )
    want = list(
        zip(
            np.repeat(np.arange(N), SIZES).tolist(),
            np.concatenate(cells["centroids_locations"]).tolist(),
            np.concatenate(cells["centroids_times"]).tolist(),
            strict=True,
        )
    )
    assert duckdb.sql("SELECT cell, location, time FROM flat").fetchall() == want
    got = pl.SQLContext(flat=pl.from_arrow(flat)).execute("SELECT cell, location, time FROM flat")
    assert got.collect().rows() == want
    mean = duckdb.sql("SELECT cell, avg(centroid[1]) FROM flat GROUP BY cell ORDER BY cell")
    assert [c for c, _ in mean.fetchall()] == [i for i in range(N) if SIZES[i]]
