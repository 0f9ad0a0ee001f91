"""Tests for zarr_ndarray_dtype._columns: the check of input columns, the fill cell, cells
gathered into columns and cut back into cell objects."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from ndarray_dtype_testing import ToyCodec

import zarr_ndarray_dtype
from zarr_ndarray_dtype import (
    ELEMENT_DTYPES,
    CellError,
    CellTypeError,
    NDArrayDType,
    write_columnar,
)
from zarr_ndarray_dtype import _columns as columns
from zarr_ndarray_dtype._columns import check_columns, cut, gather
from zarr_ndarray_dtype.blocks import cell_shapes, offsets_of
from zarr_ndarray_dtype.dtype import FillCell

F32_2 = NDArrayDType(dtype="float32", shape=(None, 2))
F32_NN = NDArrayDType(dtype="float32", shape=(None, None))


def _cell(rng: np.random.Generator, dtype: NDArrayDType, shape: tuple[int, ...]) -> np.ndarray:
    """A cell of arbitrary bit patterns (0/1 for bool)."""
    item = dtype.item_dtype
    if item.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=math.prod(shape) * item.itemsize, dtype=np.uint8)
    return raw.view(item).reshape(shape)


def _shape(rng: np.random.Generator, dtype: NDArrayDType) -> tuple[int, ...]:
    return tuple(int(rng.integers(0, 4)) if d is None else d for d in dtype.shape)


# ------------------------------------------------------------------------------------ checks


def test_rows_form_rules() -> None:
    values = np.zeros((4, 2), "f4")
    with pytest.raises(ValueError, match="start at 0"):
        check_columns(values, [1, 2, 4], F32_2)
    with pytest.raises(ValueError, match="never decrease"):
        check_columns(values, [0, 3, 2, 4], F32_2)
    with pytest.raises(ValueError, match="must equal len"):
        check_columns(values, [0, 1, 3], F32_2)
    with pytest.raises(ValueError, match="must have 4 entries for 3 cells"):
        check_columns(values, [0, 1, 4], F32_2, 3)
    with pytest.raises(TypeError, match="integer"):
        check_columns(values, np.array([0.0, 4.0]), F32_2)
    with pytest.raises(ValueError, match=r"rows of shape \(total_rows, 2\) with offsets counting"):
        check_columns(np.zeros((4, 3), "f4"), [0, 4], F32_2)
    with pytest.raises(ValueError, match=r"cell 0 has 1 items, but .* whole number of 2-item"):
        check_columns(np.zeros(4, "f4"), [0, 1, 4], F32_2)  # flat values: item offsets
    i8 = NDArrayDType(dtype="int8", shape=(None,))
    with pytest.raises(TypeError, match="object array"):
        check_columns(np.empty(2, object), [0, 2], i8)
    with pytest.raises(CellTypeError, match="fractional"):
        check_columns(np.array([0.5, 1.0]), [0, 2], i8)
    with pytest.raises(CellTypeError, match="outside the range"):
        check_columns(np.array([300]), [0, 1], NDArrayDType(dtype="uint8", shape=(None,)))
    i8 = NDArrayDType(dtype="int64", shape=(None,))
    cells = check_columns(np.array([1, 2], ">i4"), np.array([0, 2], np.uint8), i8)
    assert cells.values.dtype == np.dtype("<i8") and cells.offsets.dtype == np.int64
    cells = check_columns([], [0, 0], F32_2)
    assert cells.values.shape == (0,) and cells.offsets.tolist() == [0, 0]
    cells = check_columns(np.zeros((3, 2), "f4"), [0, 1, 3], F32_2)
    assert cells.offsets.tolist() == [0, 2, 6]  # item offsets: rows x 2
    assert cells.shapes is None and issubclass(CellError, ValueError)
    flat = check_columns(np.zeros(6, "f4"), [0, 2, 6], F32_2)  # the same cells, flat
    assert flat.offsets.tolist() == [0, 2, 6] and flat.values.shape == (6,)
    with pytest.raises(ValueError, match=r"cell 1 has shape \(3, 2\), i.e. 6 items, but offsets"):
        check_columns(np.zeros((3, 2), "f4"), [0, 1, 3], F32_2, shapes=[[1, 2], [3, 2]])
    checked = check_columns(np.zeros((3, 2), "f4"), [0, 1, 3], F32_2, shapes=[[1, 2], [2, 2]])
    assert checked.offsets.tolist() == [0, 2, 6] and checked.shapes is None


def test_integers_beyond_64_bits_are_out_of_range_on_every_write() -> None:
    """zarr's object writes and write_columnar name the value, the dtype and the rule."""
    dtype, toy = NDArrayDType("uint64", (None,)), ToyCodec()
    array = zarr.create_array(store={}, shape=(2,), dtype=dtype, serializer=toy)
    writes = (
        lambda: array.__setitem__(0, [2**64]),
        lambda: array.__setitem__(slice(None), [[1], [2**64]]),
        lambda: write_columnar(array, [1, 2**64], [0, 1, 2]),
        lambda: write_columnar(array, np.array([2**64], dtype=object), [0, 1], slice(0, 1)),
    )
    for write in writes:
        with pytest.raises(CellTypeError, match=f"{2**64}, out of range .* of uint64"):
            write()
    assert sorted(array.store._store_dict) == ["zarr.json"]  # nothing written


def test_shapes_form_rules() -> None:
    dtype = NDArrayDType(dtype="uint8", shape=(2, None))
    values = np.arange(4, dtype=np.uint8)
    good = np.array([[2, 1], [2, 1]])
    with pytest.raises(ValueError, match="must have 3 entries"):
        check_columns(values, [0, 4], dtype, 2, shapes=good)
    with pytest.raises(ValueError, match="cell 0 has shape"):
        check_columns(values, [0, 1, 4], dtype, 2, shapes=good)
    with pytest.raises(CellError, match="fixed extents"):
        check_columns(values, [0, 2, 4], dtype, 2, shapes=np.array([[1, 2], [2, 1]]))
    with pytest.raises(CellError, match="outside the range"):
        check_columns(values.astype(int) + 300, [0, 2, 4], dtype, 2, shapes=good)
    with pytest.raises(ValueError, match=r"a \(cells, 2\) table"):
        check_columns(values, [0, 2, 4], dtype, 2, shapes=good[:, :1])
    huge = np.array([[2**32 - 1, 2**32 - 1]])
    with pytest.raises(ValueError, match="over 0 items"):
        check_columns(np.zeros(0, "f4"), [0, 0], F32_NN, 1, shapes=huge)
    with pytest.raises(ValueError, match="extents must be 0"):
        check_columns(np.zeros(0, "f4"), [0, 0], F32_NN, 1, shapes=huge * 2)
    # One variable dimension: the table is checked, then derived again when needed.
    assert check_columns(values, [0, 2, 4], dtype, 2, shapes=good).shapes is None
    kept = check_columns(np.zeros(3, "f4"), [0, 3], F32_NN, 1, shapes=[[1, 3]]).shapes
    assert kept is not None and kept.tolist() == [[1, 3]]
    with pytest.raises(ValueError, match=r"shapes= is needed for the pattern \[null, null\]"):
        check_columns(np.zeros(3, "f4"), [0, 3], F32_NN, 1)
    with pytest.raises(ValueError, match="values must be flat"):
        check_columns(np.zeros((2, 2), np.uint8), [0, 2], dtype, 1)
    derived = check_columns(values, [0, 2, 4], dtype, 2)  # one variable dimension: no table
    assert derived.offsets.tolist() == [0, 2, 4] and derived.shapes is None
    with pytest.raises(ValueError, match="cell 0 has 1 items"):
        check_columns(values, [0, 1, 4], dtype, 2)


def test_bools_are_stored_as_zero_and_one() -> None:
    raw = np.array([0, 1, 2, 255], dtype=np.uint8).view(bool)
    cells = check_columns(raw, [0, 4], NDArrayDType(dtype="bool", shape=(None,)))
    assert cells.values.view(np.uint8).tolist() == [0, 1, 1, 1]


# ------------------------------------------------------------------------------ gathering


@given(
    name=st.sampled_from(ELEMENT_DTYPES),
    pattern=st.sampled_from([(None,), (None, 2), (2, None), (None, None), (None, 1, None)]),
    count=st.integers(0, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_exact_cells(name: str, pattern: tuple[int | None, ...], count: int, seed: int) -> None:
    dtype = NDArrayDType(dtype=name, shape=pattern)
    rng = np.random.default_rng(seed)
    cells = [_cell(rng, dtype, _shape(rng, dtype)) for _ in range(count)]
    got = gather(list(cells), dtype)
    assert got.values.dtype == dtype.item_dtype and type(got.values) is np.ndarray
    assert got.values.tobytes() == b"".join(c.tobytes() for c in cells)
    assert got.sizes.tolist() == [c.size for c in cells]
    shapes = cell_shapes(got, dtype.pattern)
    assert shapes.tolist() == [list(c.shape) for c in cells]
    assert (got.shapes is not None) == dtype.pattern.needs_shapes


def test_mixed_inputs_are_coerced() -> None:
    box = np.empty((), dtype=object)
    box[()] = np.array([[5, 6]], dtype=np.float32)
    cells = [
        np.array([[1, 2]], dtype=np.float32),
        None,
        [[3.0, 4.0], [0.5, 1.5]],
        box,
        np.array([[7, 8]], dtype=">f4"),
        np.array([[9, 10]], dtype=np.int16),
        np.asfortranarray(np.arange(6, dtype=np.float32).reshape(3, 2)),
        np.arange(8, dtype=np.float32).reshape(4, 2)[::2],
    ]
    got = gather(cells, F32_2)
    assert (got.sizes // 2).tolist() == [1, 0, 2, 1, 1, 1, 3, 2]  # None: the empty cell
    expected = [1, 2, 3, 4, 0.5, 1.5, 5, 6, 7, 8, 9, 10, 0, 1, 2, 3, 4, 5, 0, 1, 4, 5]
    assert got.values.tolist() == expected
    assert got.values.dtype == np.dtype("<f4")


def test_none_is_the_fill_when_asked() -> None:
    dtype = NDArrayDType(dtype="float32", shape=(2, None))
    fill = FillCell(dtype, dtype.cast_scalar(np.ones((2, 1), np.float32)))
    cells = [None, [[1.0], [2.0]], np.zeros((2, 3), ">f8")]
    got = gather(cells, dtype, fill)
    assert cell_shapes(got, dtype.pattern).tolist() == [[2, 1], [2, 1], [2, 3]]
    assert got.values[:4].tolist() == [1, 1, 1, 2]


def test_inputs_are_not_modified() -> None:
    cells = [np.array([[1, 2]], dtype=">f4"), np.array([[3, 4]], dtype=np.float32)]
    before = [c.copy() for c in cells]
    got = gather(cells, F32_2)
    got.values[...] = 0
    for c, b in zip(cells, before, strict=True):
        assert c.dtype == b.dtype
        np.testing.assert_array_equal(c, b)


def test_fill_cells_are_plain_in_the_values() -> None:
    fill = F32_2.default_scalar()[()]
    got = gather([fill, np.ones((2, 2), np.float32), fill], F32_2)
    assert type(got.values) is np.ndarray
    assert got.sizes.tolist() == [0, 4, 0]


@pytest.mark.parametrize(
    ("dtype", "cells", "phrase"),
    [
        (F32_2, [np.zeros(3, np.float32)] * 2, r"^cell 0 has shape \(3,\), which does not match"),
        (
            F32_2,
            [np.zeros((1, 2), np.float32), np.zeros((1, 3), np.float32)],
            r"^cell 1 has shape \(1, 3\), which does not match pattern \[null, 2\]",
        ),
        (
            NDArrayDType(dtype="uint8", shape=(None,)),
            [np.zeros((2, 1), np.uint8)],
            "does not match",
        ),
        (
            NDArrayDType(dtype="int32", shape=(None,)),
            [np.array([1]), np.array([2, 1.5])],
            r"^cell 1 of shape \(2,\) and dtype float64 holds 1.5, whose fractional part int32",
        ),
        (NDArrayDType(dtype="uint8", shape=(None,)), [np.array([300])], "outside the range"),
        (NDArrayDType(dtype="float32", shape=(None,)), [np.float32(1.0)], "does not match"),
        (
            NDArrayDType(dtype="float32", shape=(None,)),
            [np.array([1], np.int8), [2.0], np.array([1e40, 2.0])],
            r"^cell 2 of shape \(2,\) and dtype float64 holds 1e\+40, too large for",
        ),
    ],
)
def test_cells_that_do_not_fit_are_refused(
    dtype: NDArrayDType, cells: list[Any], phrase: str
) -> None:
    with pytest.raises((CellError, CellTypeError), match=phrase):
        gather(cells, dtype)


def test_bool_bytes_canonicalized() -> None:
    raw = np.array([0, 1, 2, 255], dtype=np.uint8).view(bool)
    got = gather([raw], NDArrayDType(dtype="bool", shape=(None,)))
    assert got.values.view(np.uint8).tolist() == [0, 1, 1, 1]


# ------------------------------------------------------------------------------- cutting


def _check(got: np.ndarray, values: np.ndarray, offsets: np.ndarray, shapes: np.ndarray) -> None:
    """Every cell: a C-contiguous read-only view of its items, in its shape."""
    assert got.dtype == object and got.shape == (offsets.size - 1,)
    for i, cell in enumerate(got):
        assert type(cell) is np.ndarray
        assert cell.shape == tuple(shapes[i])
        assert cell.dtype == values.dtype
        assert cell.flags.c_contiguous and not cell.flags.writeable
        assert np.shares_memory(cell, values) or cell.size == 0
        assert cell.reshape(-1).tolist() == values[offsets[i] : offsets[i + 1]].tolist()


@settings(max_examples=60)
@given(
    windows=st.booleans(),
    pattern=st.sampled_from([(None,), (None, 2), (2, None), (None, None), (None, 1, None)]),
    extents=st.lists(st.integers(0, 4), min_size=0, max_size=80),
)
def test_cut_matches_slices(
    windows: bool, pattern: tuple[int | None, ...], extents: list[int]
) -> None:
    dtype = NDArrayDType(dtype="float64", shape=pattern)
    k = len(dtype.pattern.variable_axes)
    rows = np.array(extents[: len(extents) // k * k], np.int64).reshape(-1, k)
    shapes = np.empty((rows.shape[0], len(pattern)), np.int64)
    shapes[:, list(dtype.pattern.variable_axes)] = rows
    for axis, d in enumerate(pattern):
        if d is not None:
            shapes[:, axis] = d
    offsets = offsets_of(np.prod(shapes, axis=1))
    values = np.arange(int(offsets[-1]), dtype=np.float64)
    with pytest.MonkeyPatch.context() as patch:  # windows for any count of cells, or never
        patch.setattr(columns, "_WINDOWS_FROM", 1 if windows else 10**12)
        patch.setattr(columns, "_PER_WINDOW", 1)
        table = shapes if k >= 2 else None
        _check(cut(values, offsets, table, dtype.pattern), values, offsets, shapes)
    assert not values.flags.writeable


@pytest.mark.parametrize("pattern", [(None, None), (2, None, None), (None, 3, None)])
@pytest.mark.parametrize("distinct", [3, 10_000], ids=["few-shapes", "many-shapes"])
def test_cut_of_many_cells(pattern: tuple[int | None, ...], distinct: int) -> None:
    dtype = NDArrayDType(dtype="int32", shape=pattern)
    rng = np.random.default_rng(0)
    n, k = 5_000, len(dtype.pattern.variable_axes)
    extents = rng.integers(0, 5 if distinct < 10 else 60, size=(n, k))
    shapes = np.empty((n, len(pattern)), np.int64)
    shapes[:, list(dtype.pattern.variable_axes)] = extents
    for axis, d in enumerate(pattern):
        if d is not None:
            shapes[:, axis] = d
    offsets = offsets_of(np.prod(shapes, axis=1))
    values = np.arange(int(offsets[-1]), dtype=np.int32)
    _check(cut(values, offsets, shapes, dtype.pattern), values, offsets, shapes)


def test_cut_of_leading_variable_cells_uses_windows() -> None:
    rng = np.random.default_rng(0)
    rows = rng.poisson(8, 50_000)
    offsets = offsets_of(rows * 2)
    values = rng.random(int(offsets[-1])).astype(np.float32)
    pattern = NDArrayDType("float32", (None, 2)).pattern
    assert columns._windowed(values, offsets, None, pattern) is not None
    cells = cut(values, offsets, None, pattern)
    for i in (0, 1, 17, 49_999):
        assert cells[i].shape == (rows[i], 2)
        np.testing.assert_array_equal(cells[i].reshape(-1), values[offsets[i] : offsets[i + 1]])
    with pytest.raises(ValueError, match="read-only"):
        cells[1][...] = 0


def test_cut_slices_where_windows_do_not_pay_or_cannot_be_made() -> None:
    n = 2_000
    dtype = NDArrayDType("uint8", (None, None))
    unique = np.stack([np.arange(n) % 7, np.arange(n)], axis=1).astype(np.int64)
    huge = np.stack([np.arange(n) % 3, np.arange(n) % 2 + 1], axis=1).astype(np.int64)
    huge[7] = [0, 2**61]  # an empty cell whose window would pass numpy's size limit
    for shapes in (unique, huge):
        offsets = offsets_of(np.prod(shapes, axis=1))
        values = np.arange(int(offsets[-1]), dtype=np.uint8)
        assert columns._windowed(values, offsets, shapes, dtype.pattern) is None
        _check(cut(values, offsets, shapes, dtype.pattern), values, offsets, shapes)


@pytest.mark.parametrize("spread", [1, 3, 2**40], ids=["dense-keys", "sparse-keys", "no-key"])
def test_distinct(spread: int) -> None:
    keys = np.array([[2, 1], [0, 5], [2, 1], [0, 5], [1, 0], [2, 1]], dtype=np.int64) * spread
    found = columns._distinct(keys)
    if spread == 2**40:  # the rows do not pack into one int64 key
        assert found is None
        return
    assert found is not None
    slots, rows, ids = found
    assert sorted(map(tuple, rows.tolist())) == sorted(set(map(tuple, keys.tolist())))
    row_of = dict(zip(slots.tolist(), rows.tolist(), strict=True))
    assert [row_of[i] for i in ids.tolist()] == keys.tolist()


def test_readonly_cells_is_a_deprecated_alias() -> None:
    block = np.arange(10, dtype="<f4").reshape(5, 2)
    offsets = np.array([0, 2, 2, 5])
    with pytest.warns(DeprecationWarning, match="readonly_cells is deprecated"):
        readonly_cells = zarr_ndarray_dtype.readonly_cells
    cells = readonly_cells(block, offsets)
    assert [c.shape for c in cells] == [(2, 2), (0, 2), (3, 2)]
    assert not block.flags.writeable and not cells[2].flags.writeable
    np.testing.assert_array_equal(cells[2], block[2:5])
