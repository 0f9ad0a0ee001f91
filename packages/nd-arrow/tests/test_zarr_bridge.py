"""nd_arrow.from_zarr / to_zarr: a 1-D zarr ``ndarray`` array <-> an ``nd_arrow.array`` column.

Skipped where zarr or zarr-vlen-ndarray is missing (the nd_arrow sessions run without zarr).
The Parquet interoperability tests also skip without DuckDB / Polars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _nd_no_pandas import RECORD_PANDAS_IMPORTS, run_script
from hypothesis import given, settings
from hypothesis import strategies as st

zarr = pytest.importorskip("zarr")
zvn = pytest.importorskip("zarr_vlen_ndarray")

from nd_arrow import NdArrowError, NdColumn, NdType  # noqa: E402
from nd_arrow.errors import NotSupportedError, ShapeMismatchError  # noqa: E402
from nd_arrow.zarr_bridge import from_zarr, to_zarr  # noqa: E402

NON_COMPLEX = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
]  # fmt: skip


def make(n: int, chunk: int, dtype: str = "float32", fixed: tuple[int, ...] = (2,)) -> Any:
    store: dict[str, Any] = {}
    return zarr.create_array(
        store,
        shape=(n,),
        chunks=(chunk,),
        dtype=zvn.NDArray(dtype=dtype, shape=(None, *fixed)),
        serializer=zvn.VlenNDArrayCodec(),
        compressors=None,
    )


def cells_of(rng: np.random.Generator, n: int, dtype: str, fixed: tuple[int, ...]) -> list[Any]:
    out = []
    for r in rng.poisson(3, n):
        shape = (int(r), *fixed)
        if dtype == "bool":
            out.append(rng.integers(0, 2, shape).astype(bool))
        else:
            out.append((rng.standard_normal(shape) * 50).astype(dtype))
    return out


def stage(cells: list[Any]) -> np.ndarray:
    return np.fromiter(cells, dtype=object, count=len(cells))


def stored(array: Any) -> dict[str, bytes]:
    store = array.store_path.store._store_dict
    return {k: v.to_bytes() for k, v in store.items() if k != "zarr.json"}


def test_from_zarr_builds_one_row_per_cell() -> None:
    rng = np.random.default_rng(0)
    cells = cells_of(rng, 9, "float32", (2,))
    array = make(9, 4)
    array[:] = stage(cells)
    column = from_zarr(array, dims=("point", "xy"))
    assert isinstance(column, pa.ExtensionArray) and isinstance(column.type, NdType)
    assert len(column) == 9 and column.null_count == 0
    col = NdColumn.from_arrow(column)  # checks every rule of the format
    for i, cell in enumerate(cells):
        row = col[i]
        assert row is not None
        assert row.dims == ("point", "xy")
        assert row.sizes == {"point": len(cell), "xy": 2}
        assert np.array_equal(row.to_numpy(), cell)
    part = NdColumn.from_arrow(from_zarr(array, dims=("point", "xy"), selection=slice(3, 7)))
    assert [a.shape for a in part.to_numpy_list()] == [c.shape for c in cells[3:7]]


def test_default_dims_and_fill_cells() -> None:
    array = make(5, 2, "int16", ())
    array[1] = np.array([1, 2, 3], "int16")
    col = NdColumn.from_arrow(from_zarr(array))
    assert col[0] is not None and col[0].dims == ("dim_0",) and col[0].shape == (0,)
    assert col[1] is not None and col[1].to_numpy().tolist() == [1, 2, 3]


def test_to_zarr_writes_the_same_bytes_as_the_object_path() -> None:
    rng = np.random.default_rng(1)
    cells = cells_of(rng, 11, "float64", (3, 2))
    source = make(11, 4, "float64", (3, 2))
    source[:] = stage(cells)
    column = from_zarr(source, dims=("n", "a", "b"))
    target = make(11, 4, "float64", (3, 2))
    to_zarr(column, target)
    assert stored(source) == stored(target)
    # An NdColumn, a chunked array and the plain storage struct are accepted too.
    for form in (NdColumn.from_arrow(column), pa.chunked_array([column]), column.storage):
        again = make(11, 4, "float64", (3, 2))
        to_zarr(form, again)
        assert stored(again) == stored(source)


def test_to_zarr_selection_and_null_rows() -> None:
    col = NdColumn.from_arrays([np.ones((2, 2), "f4"), None], dims=["p", "xy"])
    array = make(6, 3)
    to_zarr(col, array, selection=slice(2, 4))
    got = array[:]
    assert got[2].shape == (2, 2) and got[3].shape == (0, 2) and got[0].shape == (0, 2)


def test_to_zarr_refuses_rows_that_do_not_fit() -> None:
    array = make(2, 2)
    wrong_rank = NdColumn.from_arrays([np.ones((2, 2), "f4"), np.ones(3, "f4")])
    with pytest.raises(ShapeMismatchError, match="row 1 has rank 1"):
        to_zarr(wrong_rank, array)
    wrong_extent = NdColumn.from_arrays([np.ones((2, 2), "f4"), np.ones((2, 3), "f4")])
    with pytest.raises(ShapeMismatchError, match=r"row 1 has sizes \[2, 3\]"):
        to_zarr(wrong_extent, array)
    with pytest.raises(ValueError, match="must have 3 entries for 2 cells"):
        to_zarr(NdColumn.from_arrays([np.ones((1, 2), "f4")]), array)
    lossy = NdColumn.from_arrays([np.full((1, 2), 0.5), np.ones((1, 2))])
    int_array = make(2, 2, "int32")
    with pytest.raises(TypeError, match="fractional"):
        to_zarr(lossy, int_array)
    masked = NdColumn.from_arrays([np.ma.MaskedArray(np.ones((1, 2), "f4"), [[True, False]])])
    with pytest.raises(NotSupportedError, match="null values"):
        to_zarr(masked, make(1, 1))
    assert stored(array) == {} and stored(int_array) == {}


def test_from_zarr_refusals() -> None:
    array = make(2, 2)
    with pytest.raises(NdArrowError):
        from_zarr(array, dims=("only_one",))
    with pytest.raises(NdArrowError):
        from_zarr(array, dims=("same", "same"))
    complex_array = make(1, 1, "complex64")
    with pytest.raises(NotSupportedError, match="complex"):
        from_zarr(complex_array)
    plain = zarr.create_array({}, shape=(2,), chunks=(2,), dtype="int32")
    with pytest.raises(NdArrowError, match="'ndarray' data type"):
        from_zarr(plain)


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(NON_COMPLEX),
    st.lists(st.integers(1, 3), max_size=2),
    st.integers(1, 12),
    st.integers(1, 5),
    st.integers(0, 2**31),
)
def test_property_zarr_arrow_zarr_round_trip(
    dtype: str, fixed: list[int], n: int, chunk: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    cells = cells_of(rng, n, dtype, tuple(fixed))
    source = make(n, chunk, dtype, tuple(fixed))
    source[:] = stage(cells)
    dims = ["n", *(f"d{i}" for i in range(len(fixed)))]
    column = from_zarr(source, dims=dims)
    got = NdColumn.from_arrow(column).to_numpy_list()
    assert all(np.array_equal(g, c) for g, c in zip(got, cells, strict=True))
    target = make(n, chunk, dtype, tuple(fixed))
    to_zarr(column, target)
    assert stored(target) == stored(source)


# ------------------------------------------------------------------------------ Parquet


def _parquet(tmp_path: Path) -> tuple[Path, list[np.ndarray]]:
    rng = np.random.default_rng(2)
    cells = cells_of(rng, 7, "float32", (2,))
    array = make(7, 3)
    array[:] = stage(cells)
    column = from_zarr(array, dims=("point", "xy"))
    path = tmp_path / "cells.parquet"
    pq.write_table(pa.table({"cells": column}), path)
    return path, cells


def test_parquet_round_trip_keeps_the_extension_type(tmp_path: Path) -> None:
    path, cells = _parquet(tmp_path)
    table = pq.read_table(path)
    assert isinstance(table.schema.field("cells").type, NdType)
    got = NdColumn.from_arrow(table.column("cells")).to_numpy_list()
    assert all(np.array_equal(g, c) for g, c in zip(got, cells, strict=True))


def test_parquet_reads_in_duckdb_as_a_plain_struct(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path, cells = _parquet(tmp_path)
    rows = duckdb.sql(
        "SELECT cells.values, cells.dim_names, cells.dim_sizes FROM read_parquet(?)",
        params=[str(path)],
    ).fetchall()
    assert len(rows) == len(cells)
    for (values, names, sizes), cell in zip(rows, cells, strict=True):
        assert names == ["point", "xy"]
        assert sizes == list(cell.shape)
        assert np.array_equal(np.array(values, dtype="float32"), cell.reshape(-1))


def test_parquet_reads_in_polars_as_a_plain_struct(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    path, cells = _parquet(tmp_path)
    series = pl.read_parquet(path)["cells"]
    if not isinstance(series.dtype, pl.Struct):
        # Polars 2 keeps the Arrow extension type (its Extension dtype); the storage is the
        # plain struct.
        assert "nd_arrow.array" in str(series.dtype)
        series = series.ext.storage()
    assert isinstance(series.dtype, pl.Struct)
    unnested = series.struct.unnest()
    assert unnested.columns[:3] == ["values", "dim_names", "dim_sizes"]
    for values, names, sizes, cell in zip(
        unnested["values"].to_list(),
        unnested["dim_names"].to_list(),
        unnested["dim_sizes"].to_list(),
        cells,
        strict=True,
    ):
        assert names == ["point", "xy"]
        assert sizes == list(cell.shape)
        assert np.array_equal(np.array(values, dtype="float32"), cell.reshape(-1))


_NO_PANDAS = (
    """
import sys
import numpy as np, zarr
import nd_arrow, zarr_vlen_ndarray as zvn
"""
    + RECORD_PANDAS_IMPORTS
    + """
ragged = zvn.NDArray(dtype=DTYPE, shape=(None, 2))
array = zarr.create_array({}, shape=(3,), chunks=(2,), dtype=ragged)
cells = np.empty(3, dtype=object)
cells[:] = [np.ones((2, 2), DTYPE), np.zeros((0, 2), DTYPE), np.ones((1, 2), DTYPE)]
array[:] = cells
col = nd_arrow.from_zarr(array, dims=("point", "xy"))
from nd_arrow.zarr_bridge import table_from_zarr, table_to_zarr
table_to_zarr(table_from_zarr({"c": array}), {"c": array})
table_from_zarr({"c": array}, explode=True)
assert asked == [], asked
assert nd_arrow.NdColumn.from_arrow(col).to_numpy_list()[0].shape == (2, 2)
"""
)


@pytest.mark.parametrize("dtype", ["float32", "bool", "uint64"])
def test_from_zarr_never_imports_pandas(dtype: str) -> None:
    """pa.array and pa.table(table) import pandas (seconds where it is installed); from_zarr and
    the aligned tables build from buffers."""
    run_script(_NO_PANDAS.replace("DTYPE", repr(dtype)))


def test_gridded_vlen_array_round_trips_in_c_order_of_the_selection() -> None:
    """A (time, station) grid of [null, 2] cells: rows in C order of the selection, and back."""
    dtype = zvn.NDArray(dtype="float32", shape=(None, 2))

    def grid() -> Any:
        return zarr.create_array(
            {}, shape=(2, 3), chunks=(1, 2), dtype=dtype, serializer=zvn.VlenNDArrayCodec()
        )

    src = grid()
    cells = np.empty((2, 3), dtype=object)
    for i in range(2):
        for j in range(3):
            cells[i, j] = np.full((i + j, 2), 10 * i + j, np.float32)
    src[:] = cells
    rows = NdColumn.from_arrow(from_zarr(src)).to_numpy_list()
    assert [r.shape for r in rows] == [c.shape for c in cells.reshape(-1)]
    station = NdColumn.from_arrow(from_zarr(src, selection=(slice(None), 1))).to_numpy_list()
    assert [float(r[0, 0]) for r in station] == [1.0, 11.0]
    dst = grid()
    to_zarr(from_zarr(src), dst)
    assert all(
        np.array_equal(zvn.unbox(dst[i, j]), cells[i, j]) for i in range(2) for j in range(3)
    )
