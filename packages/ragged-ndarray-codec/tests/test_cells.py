"""Tests for zarr_ragged_ndarray.cells: gathering cells and cutting values into cells."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _zrn_helpers import object_array

from zarr_ndarray_dtype import CellError, NDArray
from zarr_ragged_ndarray import cells as cells_module
from zarr_ragged_ndarray.cells import cut_cells, full_shapes, gather_cells, variable_extents
from zarr_ragged_ndarray.segments import offsets_of


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
    shapes = full_shapes(extents.astype(np.int64), dtype)
    offsets = offsets_of(np.prod(shapes, axis=1))
    values = np.arange(int(offsets[-1]), dtype=np.int32)
    got = cut_cells(values, shapes, offsets, dtype)
    assert got.shape == (n,)
    for i in (0, 1, n // 2, n - 1, *rng.integers(0, n, 50).tolist()):
        cell = got[i]
        assert cell.shape == tuple(shapes[i])
        assert cell.flags.c_contiguous
        assert not cell.flags.writeable
        assert cell.reshape(-1).tolist() == values[offsets[i] : offsets[i + 1]].tolist()


def test_strategies_are_chosen_by_repetition() -> None:
    shapes = np.array([[1, 1]] * 2_000 + [[0, 3]] * 2_000, dtype=np.int64)
    offsets = offsets_of(np.prod(shapes, axis=1))
    values = np.arange(int(offsets[-1]), dtype=np.float32)
    assert cells_module._grouped(values, shapes, offsets) is not None
    unique = np.stack([np.arange(4_000), np.zeros(4_000, np.int64)], axis=1)
    assert cells_module._grouped(values, unique, offsets_of(np.zeros(4_000, np.int64))) is None


def test_row_windows_when_only_trailing_shapes_repeat() -> None:
    """Unique (h, w) shapes with few widths: cut as step slices of one window per width."""
    n = 3_000
    shapes = np.stack([np.arange(n) % 997, np.arange(n) % 3], axis=1).astype(np.int64)
    offsets = offsets_of(np.prod(shapes, axis=1))
    values = np.arange(int(offsets[-1]), dtype=np.float64)
    assert cells_module._grouped(values, shapes, offsets) is None
    got = cells_module._by_rows(values, shapes, offsets)
    assert got is not None
    for i in (0, 1, 2, 5, 998, n - 1):
        assert got[i].shape == tuple(shapes[i])
        assert got[i].flags.c_contiguous
        assert got[i].reshape(-1).tolist() == values[offsets[i] : offsets[i + 1]].tolist()
    dtype = NDArray(dtype="float64", shape=(None, None))
    whole = cut_cells(values, shapes, offsets, dtype)
    assert all(not c.flags.writeable for c in whole[:10])


def test_gather_mixed_inputs_and_none() -> None:
    dtype = NDArray(dtype="float32", shape=(None, 2, None))
    fill = np.ones((1, 2, 1), np.float32)
    cells = [
        None,
        [[[1.0], [2.0]]],
        np.zeros((2, 2, 3), ">f8"),
        np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 2, 2)),
    ]
    values, shapes = gather_cells(cells, dtype, fill)
    assert shapes.tolist() == [[1, 2, 1], [1, 2, 1], [2, 2, 3], [3, 2, 2]]
    assert values[:4].tolist() == [1, 1, 1, 2]
    assert values[-12:].tolist() == list(range(12))
    assert variable_extents(shapes, dtype).tolist() == [[1, 1], [1, 1], [2, 3], [3, 2]]


def test_gather_refuses_wrong_shapes() -> None:
    dtype = NDArray(dtype="float32", shape=(None, 2))
    with pytest.raises(CellError, match="does not match pattern"):
        gather_cells([np.zeros((1, 2), np.float32), np.zeros((1, 3), np.float32)], dtype)
    with pytest.raises(CellError):
        gather_cells(object_array([np.zeros(2, np.float32)]).tolist(), dtype)


@pytest.mark.parametrize("big", [False, True], ids=["packed-key", "lexsort"])
def test_groups_sort_rows_into_runs(big: bool) -> None:
    scale = 2**40 if big else 1
    keys = np.array([[2, 1], [0, 5], [2, 1], [0, 5], [1, 0], [2, 1]], dtype=np.int64) * scale
    found = cells_module._groups(keys, 1)
    assert found is not None
    order, bounds = found
    runs = [keys[order[a:b]].tolist() for a, b in itertools.pairwise(bounds)]
    assert [len(r) for r in runs] == [2, 1, 3]
    assert all(all(row == r[0] for row in r) for r in runs)
    assert cells_module._groups(keys, 3) is None
