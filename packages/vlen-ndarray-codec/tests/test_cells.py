"""Tests for zarr_vlen_ndarray.cells: gathering cells into one block."""

from __future__ import annotations

import numpy as np
import pytest
from _zvn_helpers import ndarray_dtypes, random_cell
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_dtype import CellError, CellTypeError, NDArray
from zarr_vlen_ndarray.cells import gather_cells, trailing_dims

F32_2 = NDArray(dtype="float32", shape=(None, 2))


def _expected(cells: list[np.ndarray], dtype: NDArray) -> bytes:
    return b"".join(np.ascontiguousarray(c, dtype=dtype.item_dtype).tobytes() for c in cells)


@given(ndarray_dtypes(), st.lists(st.integers(0, 5), max_size=12), st.integers(0, 2**32 - 1))
def test_exact_cells(dtype: NDArray, rows: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    cells = [random_cell(rng, dtype, r) for r in rows]
    block, got_rows = gather_cells(list(cells), dtype)
    assert got_rows.tolist() == rows
    assert got_rows.dtype == np.int64
    assert block.shape == (sum(rows), *trailing_dims(dtype))
    assert block.dtype == dtype.item_dtype
    assert block.flags.c_contiguous
    assert type(block) is np.ndarray
    assert block.tobytes() == _expected(cells, dtype)


def test_empty_list() -> None:
    block, rows = gather_cells([], F32_2)
    assert block.shape == (0, 2)
    assert block.dtype == np.dtype("<f4")
    assert rows.shape == (0,)


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
    block, rows = gather_cells(cells, F32_2)
    assert rows.tolist() == [1, 0, 2, 1, 1, 1, 3, 2]
    expected = [
        [1, 2], [3, 4], [0.5, 1.5], [5, 6], [7, 8], [9, 10],
        [0, 1], [2, 3], [4, 5], [0, 1], [4, 5],
    ]  # fmt: skip
    np.testing.assert_array_equal(block, np.array(expected, dtype=np.float32))
    assert block.dtype == np.dtype("<f4")


def test_inputs_not_modified() -> None:
    cells = [np.array([[1, 2]], dtype=">f4"), np.array([[3, 4]], dtype=np.float32)]
    before = [c.copy() for c in cells]
    snapshot = list(cells)
    block, _ = gather_cells(cells, F32_2)
    block[...] = 0
    assert cells == snapshot
    for c, b in zip(cells, before, strict=True):
        assert c.dtype == b.dtype
        np.testing.assert_array_equal(c, b)


def test_fill_cells_are_plain_in_the_block() -> None:
    fill = F32_2.default_scalar()[()]
    block, rows = gather_cells([fill, np.ones((2, 2), np.float32), fill], F32_2)
    assert type(block) is np.ndarray
    assert rows.tolist() == [0, 2, 0]


def test_all_cells_one_wrong_shape_refused() -> None:
    with pytest.raises(CellError, match=r"shape \(3,\) does not match pattern \(None, 2\)"):
        gather_cells([np.zeros(3, np.float32), np.zeros(3, np.float32)], F32_2)
    with pytest.raises(CellError, match="does not match pattern"):
        gather_cells([np.zeros((1, 3), np.float32)], F32_2)


def test_rank_mismatch_refused() -> None:
    pattern = NDArray(dtype="uint8", shape=(None,))
    with pytest.raises(CellError, match="does not match pattern"):
        gather_cells([np.zeros((2, 1), np.uint8)], pattern)
    with pytest.raises(CellError, match="does not match pattern"):
        gather_cells([np.zeros(2, np.uint8), np.zeros((2, 1), np.uint8)], pattern)


def test_lossy_conversion_refused() -> None:
    with pytest.raises(CellTypeError, match="fractional"):
        gather_cells([np.array([1.5])], NDArray(dtype="int32", shape=(None,)))
    with pytest.raises(CellTypeError, match="outside the range"):
        gather_cells([np.array([300])], NDArray(dtype="uint8", shape=(None,)))


def test_scalar_cell_refused() -> None:
    with pytest.raises(CellError):
        gather_cells([np.float32(1.0)], NDArray(dtype="float32", shape=(None,)))


def test_bool_bytes_canonicalized() -> None:
    raw = np.array([0, 1, 2, 255], dtype=np.uint8).view(bool)
    block, rows = gather_cells([raw], NDArray(dtype="bool", shape=(None,)))
    assert rows.tolist() == [4]
    assert block.view(np.uint8).tolist() == [0, 1, 1, 1]


def test_trailing_dims() -> None:
    assert trailing_dims(NDArray(dtype="int8", shape=(None,))) == ()
    assert trailing_dims(NDArray(dtype="int8", shape=(None, 3, 2))) == (3, 2)
    with pytest.raises(ValueError, match=r"pattern \[null, d1, \.\.\., dk\]"):
        trailing_dims(NDArray(dtype="int8", shape=(2, None)))
    with pytest.raises(ValueError, match=r"got \[3\]"):
        trailing_dims(NDArray(dtype="int8", shape=(3,)))
