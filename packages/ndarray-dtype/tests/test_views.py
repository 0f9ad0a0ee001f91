"""Tests for zarr_ndarray_dtype.views: per-cell read-only views of one block."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_ndarray_dtype import views
from zarr_ndarray_dtype.views import readonly_cells


def _check(block: np.ndarray, offsets: np.ndarray) -> None:
    expected = [block[a:b].copy() for a, b in pairwise(offsets)]
    cells = readonly_cells(block, offsets)
    assert cells.dtype == object
    assert cells.shape == (offsets.size - 1,)
    for got, want in zip(cells, expected, strict=True):
        assert type(got) is np.ndarray
        assert got.shape == want.shape
        assert got.dtype == block.dtype
        assert got.flags.c_contiguous
        assert not got.flags.writeable
        assert np.shares_memory(got, block) or got.size == 0
        np.testing.assert_array_equal(got, want)
    assert not block.flags.writeable


@settings(max_examples=60)
@given(
    grouped=st.booleans(),
    dense=st.booleans(),
    rows=st.lists(st.integers(0, 6), min_size=1, max_size=40),
    trailing=st.lists(st.integers(1, 3), max_size=2),
)
def test_views_match_slices(
    grouped: bool, dense: bool, rows: list[int], trailing: list[int]
) -> None:
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    block = np.arange(int(offsets[-1]) * int(np.prod(trailing)), dtype=np.float64)
    with pytest.MonkeyPatch.context() as patch:
        # Move the thresholds so that both implementations are exercised on small inputs.
        if grouped:
            patch.setattr(views, "_MIN_CELLS", 0)
            patch.setattr(views, "_MIN_CELLS_PER_GROUP", 1)
            # Windows in a table indexed by extent, or by the extent's rank.
            patch.setattr(views, "_DENSE_EXTENTS_PER_CELL", 10**6 if dense else 0)
        else:
            patch.setattr(views, "_MIN_CELLS", 10**12)
        _check(block.reshape(-1, *trailing), offsets)


def test_large_chunk_uses_the_grouped_path() -> None:
    rng = np.random.default_rng(0)
    rows = rng.poisson(8, 50_000)
    offsets = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    block = rng.random((int(offsets[-1]), 2)).astype(np.float32)
    cells = readonly_cells(block, offsets)
    # Grouped views come from strided windows, not directly from the block.
    assert cells[0].base is not block
    for i in (0, 1, 17, 49_999):
        np.testing.assert_array_equal(cells[i], block[offsets[i] : offsets[i + 1]])
    with pytest.raises(ValueError, match="read-only"):
        cells[1][...] = 0


def test_empty() -> None:
    cells = readonly_cells(np.zeros((0, 2), np.float32), np.zeros(1, dtype=np.int64))
    assert cells.shape == (0,)
