"""Tests for zarr_ndarray_dtype.blocks: cells as flat columns, and blocks copy like slices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_dtype import NDArrayDType, blocks
from zarr_ndarray_dtype.blocks import (
    ColumnsBlock,
    FlatCells,
    cell_shapes,
    copy_segments,
    offsets_of,
)


def test_cells_is_a_deprecated_alias() -> None:
    with pytest.warns(DeprecationWarning, match="use FlatCells"):
        assert blocks.Cells is FlatCells
    assert "Cells" not in blocks.__all__


def test_cell_shapes() -> None:
    dtype = NDArrayDType(dtype="int8", shape=(3, None))
    cells = FlatCells(np.zeros(9, np.int8), np.array([0, 3, 3, 9]), None)
    assert cell_shapes(cells, dtype.pattern).tolist() == [[3, 1], [3, 0], [3, 2]]
    pair = NDArrayDType(dtype="int8", shape=(None, None))
    assert pair.pattern.needs_shapes and not dtype.pattern.needs_shapes


def test_columns_block_copies_any_cells_anywhere() -> None:
    values = np.arange(10, dtype=np.int32)
    offsets = np.array([0, 3, 3, 7, 10])
    block = ColumnsBlock(FlatCells(values, offsets, None))
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


# ------------------------------------------------------------- segments between buffers


def _naive(src: np.ndarray, starts: np.ndarray, nbytes: np.ndarray, size: int, dst: np.ndarray):  # type: ignore[no-untyped-def]
    out = np.zeros(size, np.uint8)
    for s, n, d in zip(starts.tolist(), nbytes.tolist(), dst.tolist(), strict=True):
        out[d : d + n] = src[s : s + n]
    return out


@pytest.mark.parametrize("by_slices", [True, False])
@given(
    sizes=st.lists(st.integers(0, 9), min_size=1, max_size=200),
    width=st.sampled_from([1, 2, 4, 8]),
    shuffled=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_copy_segments_matches_naive(
    by_slices: bool, sizes: list[int], width: int, shuffled: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    nbytes = np.array(sizes, np.int64) * width
    src = rng.integers(0, 256, int(nbytes.sum()) + 16 * width, dtype=np.uint8)
    starts = offsets_of(nbytes)[:-1] + rng.integers(0, 2, nbytes.size) * width  # runs and gaps
    starts = np.minimum(starts, src.size - nbytes)
    dst = offsets_of(nbytes)[:-1]
    if shuffled:  # cells to places in any order
        order = rng.permutation(nbytes.size)
        dst = offsets_of(nbytes[order])[:-1][np.argsort(order)]
    with pytest.MonkeyPatch.context() as patch:
        if not by_slices:  # force the vectorized gather
            patch.setattr(blocks, "_SLICE_RUNS", 0)
            patch.setattr(blocks, "_SLICE_RUN_BYTES", 10**9)
        out = np.zeros(int(nbytes.sum()), np.uint8)
        copy_segments(src, starts, nbytes, out, dst)
    assert out.tolist() == _naive(src, starts, nbytes, out.size, dst).tolist()


def test_runs_are_merged_into_one_slice() -> None:
    src = np.arange(100, dtype=np.uint8)
    nbytes = np.full(10, 10, np.int64)
    starts = offsets_of(nbytes)[:-1]
    out = np.zeros(100, np.uint8)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blocks, "_SLICE_RUNS", 1)  # one run at most: only merging gets there
        patch.setattr(blocks, "_SLICE_RUN_BYTES", 10**9)
        copy_segments(src, starts, nbytes, out, starts.copy())
    assert out.tolist() == src.tolist()


def test_empty() -> None:
    out = np.zeros(0, np.uint8)
    empty = np.zeros(0, np.int64)
    copy_segments(np.zeros(3, np.uint8), empty, empty, out, empty)
    assert offsets_of(empty).tolist() == [0]
