"""Tests for zarr_ndarray_dtype.blocks: the engine's own sources of cells copy like slices."""

from __future__ import annotations

import numpy as np

from zarr_ndarray_dtype import NDArray
from zarr_ndarray_dtype._columns import FillBlock, FillCell
from zarr_ndarray_dtype._segments import offsets_of
from zarr_ndarray_dtype.blocks import Cells, ColumnsBlock


def test_columns_block_copies_any_cells_anywhere() -> None:
    values = np.arange(10, dtype=np.int32)
    offsets = np.array([0, 3, 3, 7, 10])
    block = ColumnsBlock(Cells(values, offsets, None))
    assert block.sizes.tolist() == [3, 0, 4, 3] and block.shapes is None
    cells = np.array([3, 0, 2], np.intp)
    sizes = block.sizes[cells]
    out = np.full(int(sizes.sum()), -1, np.int32)
    block.copy(cells, out.view(np.uint8), offsets_of(sizes)[:-1] * 4)
    assert out.tolist() == [7, 8, 9, 0, 1, 2, 3, 4, 5, 6]
    assert block.cells().values is values
    out[:] = -1
    block.copy(slice(1, 4), out.view(np.uint8), 8)  # consecutive cells, back to back from 8
    assert out.tolist() == [-1, -1, 3, 4, 5, 6, 7, 8, 9, -1]


def test_fill_block_copies_its_one_cell_to_every_place() -> None:
    dtype = NDArray(dtype="int16", shape=(None, 2))
    fill = FillBlock(FillCell(dtype, dtype.cast_scalar(np.array([[5, 6]], np.int16))), False)
    assert fill.sizes.tolist() == [2]
    out = np.zeros(6, np.int16)
    fill.copy(np.zeros(2, np.intp), out.view(np.uint8), np.array([0, 8]))
    assert out.tolist() == [5, 6, 0, 0, 5, 6]
    empty = FillBlock(FillCell(dtype, dtype.default_scalar()), True)
    empty.copy(np.zeros(3, np.intp), out.view(np.uint8), np.zeros(3, np.int64))  # nothing to copy
    assert empty.shapes is not None and empty.shapes.tolist() == [[0, 2]]
    assert empty.cells().offsets.tolist() == [0, 0]
