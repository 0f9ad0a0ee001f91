"""Tests for zarr_ndarray_dtype.awkward: Columnar to awkward arrays and back, every pattern."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from ndarray_dtype_testing import ToyCodec, element_dtypes, patterns

from zarr_ndarray_dtype import CellError, Columnar, read_columnar
from zarr_ndarray_dtype import NDArrayDType as NDArray

ak = pytest.importorskip("awkward")


def _cells(rng: np.random.Generator, dtype: NDArray, extents: tuple[int, ...]) -> np.ndarray:
    """Random cells of ``dtype``; a variable extent below an extent 0 is 0 (awkward has no
    place for it in a cell without items)."""
    out = np.empty(extents, dtype=object)
    for index in np.ndindex(*extents):
        shape: list[int] = []
        for d in dtype.shape:
            shape.append(int(rng.integers(0, 3)) if d is None and 0 not in shape else d or 0)
        raw = rng.integers(0, 2 if dtype.item_dtype.kind == "b" else 100, size=shape)
        out[index] = raw.astype(dtype.item_dtype)
    return out


def _columnar(cells: np.ndarray, dtype: NDArray) -> Columnar:
    array = zarr.create_array(
        {}, shape=cells.shape, chunks=tuple(max(1, n // 2) for n in cells.shape), dtype=dtype,
        serializer=ToyCodec(),
    )  # fmt: skip
    array[...] = cells
    return read_columnar(array)


def _same(a: Columnar, b: Columnar) -> None:
    assert a.data_type == b.data_type and a.shape == b.shape
    assert a.values.shape == b.values.shape and a.values.tobytes() == b.values.tobytes()
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.shapes, b.shapes)


@settings(max_examples=60, deadline=None)
@given(
    pattern=patterns,
    item=element_dtypes,
    grid=st.lists(st.integers(0, 4), min_size=1, max_size=2).map(tuple),
    seed=st.integers(0, 2**16),
)
def test_round_trip_every_pattern(
    pattern: tuple[int | None, ...], item: str, grid: tuple[int, ...], seed: int
) -> None:
    dtype = NDArray(dtype=item, shape=pattern)
    col = _columnar(_cells(np.random.default_rng(seed), dtype, grid), dtype)
    arr = col.to_awkward()
    assert len(arr) == grid[0]
    cell_type = " * ".join("var" if d is None else str(d) for d in pattern)
    assert str(arr.type) == " * ".join([*map(str, grid), cell_type, item])
    back = Columnar.from_awkward(arr, ndim=len(grid))
    _same(back, col)
    if col.values.size:  # the items are never copied, either way
        assert np.shares_memory(back.values, col.values)


def test_leading_variable_cells_share_the_values() -> None:
    dtype = NDArray(dtype="float32", shape=(None, 2))
    col = _columnar(_cells(np.random.default_rng(1), dtype, (6,)), dtype)
    arr = col.to_awkward()
    assert str(arr.type) == "6 * var * 2 * float32"
    layout = arr.layout
    assert type(layout).__name__ == "ListOffsetArray"
    assert type(layout.content).__name__ == "RegularArray"
    items = layout.content.content.data
    assert np.shares_memory(items, col.values)
    assert np.shares_memory(layout.offsets.data, col.offsets)
    assert [len(c) for c in arr.to_list()] == np.diff(col.offsets).tolist()


def test_from_awkward_of_lists_and_of_a_slice() -> None:
    arr = ak.Array([[[1.5, 2.0], [3.0, 4.0]], [], [[5.0, 6.0]]])
    col = Columnar.from_awkward(arr)
    assert col.data_type == NDArray(dtype="float64", shape=(None, None))
    assert col.shapes.tolist() == [[2, 2], [0, 0], [1, 2]] and col.offsets.tolist() == [0, 4, 4, 6]
    regular = ak.to_regular(arr[[0, 2]], axis=2)  # var * 2: rows of [null, 2]
    rows = Columnar.from_awkward(regular[1:])
    assert rows.data_type.shape == (None, 2) and rows.values.tolist() == [[5.0, 6.0]]
    assert rows.offsets.tolist() == [0, 1]
    numpy_backed = Columnar.from_awkward(ak.from_numpy(np.arange(12, dtype="i2").reshape(2, 3, 2)))
    assert numpy_backed.data_type == NDArray(dtype="int16", shape=(3, 2))
    assert numpy_backed.values.tolist() == list(range(12))


@pytest.mark.parametrize(
    ("data", "ndim", "rule"),
    [
        ([[1, None]], 1, "missing values"),
        ([{"x": [1]}], 1, "records"),
        ([[1, 2], [[3]]], 1, "a union"),
        ([["a", "b"]], 1, "strings"),
        ([[[1, 2], [3]]], 1, "cell 0 with rows of different lengths"),
        ([1.0, 2.0], 1, "no axis below the cells"),
        ([[1.0], [2.0, 3.0]], 2, "a var dimension 1"),
        ([[]], 1, "no item type"),
    ],
)
def test_what_no_pattern_holds_is_refused_naming_the_type(data: Any, ndim: int, rule: str) -> None:
    arr = ak.Array(data)
    with pytest.raises(CellError, match=re.escape(f"the awkward type {arr.type} has {rule}")):
        Columnar.from_awkward(arr, ndim=ndim)


def test_item_types_and_extents_outside_the_patterns_are_refused() -> None:
    dates = ak.Array([np.array(["2020-01-01"], dtype="datetime64[D]")])
    with pytest.raises(CellError, match=r"items of dtype datetime64.* element dtype must be"):
        Columnar.from_awkward(dates)
    empty_axis = ak.from_numpy(np.zeros((2, 0), dtype="int32"))  # 2 * 0 * int32
    with pytest.raises(CellError, match=r"in cells \(0,\).* dimensions must be >= 1"):
        Columnar.from_awkward(empty_axis)
    with pytest.raises(ValueError, match="ndim=0 must be an int >= 1"):
        Columnar.from_awkward(ak.Array([[1]]), ndim=0)


def test_one_cell_selection_is_an_array_of_one() -> None:
    dtype = NDArray(dtype="int8", shape=(2, None))
    array = zarr.create_array({}, shape=(3,), chunks=(3,), dtype=dtype, serializer=ToyCodec())
    array[1] = np.arange(6, dtype="i1").reshape(2, 3)
    col = read_columnar(array, 1)
    assert col.shape == () and math.prod(col.shape) == 1
    arr = col.to_awkward()
    assert str(arr.type) == "1 * 2 * var * int8" and arr.to_list() == [[[0, 1, 2], [3, 4, 5]]]


def test_aligned_columns_are_one_record_of_rows() -> None:
    """read_aligned's columns (one offsets) are ``var * {field: ...}`` and back, zero-copy."""
    from zarr_ndarray_dtype.awkward import from_awkward, to_awkward

    offsets = np.array([0, 2, 2, 5, 6, 9, 10])
    centroids = Columnar(
        NDArray("float32", (None, 2)),
        np.arange(20, dtype="f4").reshape(10, 2),
        offsets,
        None,
        (2, 3),
    )
    times = Columnar(NDArray("uint64", (None,)), np.arange(10, dtype="u8"), offsets, None, (2, 3))
    array = to_awkward({"centroids": centroids, "times": times})
    assert str(array.type) == "2 * 3 * var * {centroids: 2 * float32, times: uint64}"
    assert array[1, 1, 2].tolist() == {"centroids": [16.0, 17.0], "times": 8}
    back = from_awkward(array, ndim=2)
    assert sorted(back) == ["centroids", "times"]
    for name, col in (("centroids", centroids), ("times", times)):
        assert back[name].shape == (2, 3) and back[name].data_type == col.data_type
        assert np.array_equal(back[name].offsets, offsets)
        assert np.shares_memory(back[name].values, col.values)


def test_missing_cells_are_empty_cells() -> None:
    """A None cell is the empty cell, as None is in object writes of the default fill."""
    col = Columnar.from_awkward(ak.Array([[[1.0, 2.0]], None, [[3.0, 4.0], [5.0, 6.0]]]))
    assert col.data_type.shape == (None, None)  # var * var * float64
    assert col.shapes.tolist() == [[1, 2], [0, 0], [2, 2]]
    assert col.values.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
