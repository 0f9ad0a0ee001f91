"""Tests for zarr_ndarray_dtype._views: the one cell cutter, every strategy against slices."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_ndarray_dtype import NDArray
from zarr_ndarray_dtype import _views as views
from zarr_ndarray_dtype._segments import offsets_of
from zarr_ndarray_dtype._views import cut_cells, readonly_cells


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
            patch.setattr(views, "_DENSE_KEYS_PER_CELL", 10**6 if dense else 0)
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


# --------------------------------------------------------------- cells of any pattern


def _full_shapes(extents: np.ndarray, dtype: NDArray) -> np.ndarray:
    shapes = np.empty((extents.shape[0], dtype.pattern.ndim), dtype=np.int64)
    shapes[:, list(dtype.pattern.variable_axes)] = extents
    for axis, extent in enumerate(dtype.pattern.dims):
        if extent is not None:
            shapes[:, axis] = extent
    return shapes


@pytest.mark.parametrize("pattern", [(None, None), (2, None, None), (None, 3, None)])
@pytest.mark.parametrize("distinct", [3, 10_000], ids=["few-shapes", "many-shapes"])
def test_cut_cells_grouped_or_sliced(pattern: tuple[int | None, ...], distinct: int) -> None:
    dtype = NDArray(dtype="int32", shape=pattern)
    rng = np.random.default_rng(0)
    n = 5_000
    k = len(dtype.pattern.variable_axes)
    extents = rng.integers(0, distinct, size=(n, k)) % 5
    if distinct > 10:
        extents = rng.integers(0, 60, size=(n, k))
    shapes = _full_shapes(extents.astype(np.int64), dtype)
    offsets = offsets_of(np.prod(shapes, axis=1))
    values = np.arange(int(offsets[-1]), dtype=np.int32)
    got = cut_cells(values, offsets, shapes, dtype.pattern)
    assert got.shape == (n,)
    for i in (0, 1, n // 2, n - 1, *rng.integers(0, n, 50).tolist()):
        cell = got[i]
        assert cell.shape == tuple(shapes[i])
        assert cell.flags.c_contiguous
        assert not cell.flags.writeable
        assert cell.reshape(-1).tolist() == values[offsets[i] : offsets[i + 1]].tolist()


@pytest.mark.parametrize("pattern", [(None,), (None, 2), (3, None), (None, 1, 2)])
def test_cut_cells_of_one_variable_dimension_derive_shapes(pattern: tuple[int | None, ...]) -> None:
    dtype = NDArray(dtype="float64", shape=pattern)
    fixed = dtype.pattern.fixed_items
    sizes = np.array([0, 1, 3, 2, 0], np.int64) * fixed
    offsets = offsets_of(sizes)
    values = np.arange(int(offsets[-1]), dtype=np.float64)
    got = cut_cells(values, offsets, None, dtype.pattern)
    for i, size in enumerate(sizes.tolist()):
        assert got[i].shape == dtype.pattern.shape_for_items(size)
        assert got[i].reshape(-1).tolist() == values[offsets[i] : offsets[i + 1]].tolist()
        assert not got[i].flags.writeable


def _strategy(
    values: np.ndarray, shapes: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, np.ndarray]:
    """Which cutting strategy cut_cells picks, and its result."""
    used = ["slices"]
    for name in ("_by_shape", "_by_rows"):
        original = getattr(views, name)

        def spy(*args: Any, _name: str = name, _original: Any = original) -> Any:
            used.append(_name)
            return _original(*args)

        monkeypatch.setattr(views, name, spy)
    offsets = offsets_of(np.prod(shapes, axis=1))
    dtype = NDArray(dtype=values.dtype.name, shape=(None, None))
    got = cut_cells(values, offsets, shapes, dtype.pattern)
    for i in (0, 1, 2, 5, len(got) // 2, len(got) - 1):
        assert got[i].shape == tuple(shapes[i])
        assert got[i].flags.c_contiguous
        assert not got[i].flags.writeable
        assert got[i].reshape(-1).tolist() == values[offsets[i] : offsets[i + 1]].tolist()
    return used[-1], got


def test_repeated_shapes_use_shape_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = np.array([[1, 1]] * 2_000 + [[0, 3]] * 2_000 + [[2, 2]] * 40, dtype=np.int64)
    values = np.arange(int(np.prod(shapes, axis=1).sum()), dtype=np.float32)
    assert _strategy(values, shapes, monkeypatch)[0] == "_by_shape"


def test_repeated_trailing_shapes_use_row_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 3_000
    shapes = np.stack([np.arange(n) % 997, np.arange(n) % 3], axis=1).astype(np.int64)
    values = np.arange(int(np.prod(shapes, axis=1).sum()), dtype=np.float64)
    assert _strategy(values, shapes, monkeypatch)[0] == "_by_rows"


def test_unique_shapes_use_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 2_000
    shapes = np.stack([np.arange(n) % 7, np.arange(n)], axis=1).astype(np.int64)
    values = np.arange(int(np.prod(shapes, axis=1).sum()), dtype=np.int16)
    assert _strategy(values, shapes, monkeypatch)[0] == "slices"


@pytest.mark.parametrize("spread", [1, 3, 2**40], ids=["dense-table", "unique", "no-key"])
def test_classes(spread: int) -> None:
    keys = np.array([[2, 1], [0, 5], [2, 1], [0, 5], [1, 0], [2, 1]], dtype=np.int64) * spread
    found = views._classes(keys)
    if spread == 2**40:  # the rows do not pack into one int64 key
        assert found is None
        return
    assert found is not None
    ids, rows = found
    assert sorted(map(tuple, rows.tolist())) == sorted(set(map(tuple, keys.tolist())))
    assert rows[ids].tolist() == keys.tolist()


@pytest.mark.parametrize("repeat", [5, 997], ids=["_by_shape", "_by_rows"])
def test_windows_with_empty_shapes(repeat: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Shapes and trailing shapes with no items ((h, 0)), or with more items than the chunk holds
    # ((0, w), w beyond the values): their cells are empty; the window strategies still apply.
    n = 4_000
    h = np.arange(n) % repeat
    w = np.where(np.arange(n) % 4 == 0, 0, np.arange(n) % 3 + 1)
    shapes = np.stack([h, w], axis=1).astype(np.int64)
    shapes[7] = [0, 10**9]
    values = np.arange(int(np.prod(shapes, axis=1).sum()), dtype=np.uint8)
    assert values.size < 10**9
    used, got = _strategy(values, shapes, monkeypatch)
    assert used == ("_by_shape" if repeat == 5 else "_by_rows")
    offsets = offsets_of(np.prod(shapes, axis=1))
    for i, shape in enumerate(shapes.tolist()):
        assert got[i].shape == tuple(shape)
        assert not got[i].flags.writeable
        assert got[i].reshape(-1).tolist() == values[offsets[i] : offsets[i + 1]].tolist()
