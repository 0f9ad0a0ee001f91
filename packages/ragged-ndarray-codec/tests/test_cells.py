"""Tests for zarr_ragged_ndarray.cells: gathering cells and cutting values into cells."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _zrn_helpers import object_array

from zarr_ndarray_dtype import CellError, NDArray
from zarr_ndarray_dtype.segments import offsets_of
from zarr_ragged_ndarray import cells as cells_module
from zarr_ragged_ndarray.cells import cut_cells, full_shapes, gather_cells, variable_extents


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


def _strategy(
    values: np.ndarray, shapes: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, np.ndarray]:
    """Which cutting strategy cut_cells picks, and its result."""
    used = ["slices"]
    for name in ("_by_shape", "_by_rows"):
        original = getattr(cells_module, name)

        def spy(*args: Any, _name: str = name, _original: Any = original) -> Any:
            used.append(_name)
            return _original(*args)

        monkeypatch.setattr(cells_module, name, spy)
    offsets = offsets_of(np.prod(shapes, axis=1))
    dtype = NDArray(dtype=values.dtype.name, shape=(None, None))
    got = cut_cells(values, shapes, offsets, dtype)
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


@pytest.mark.parametrize("spread", [1, 3, 2**40], ids=["dense-table", "unique", "no-key"])
def test_classes(spread: int) -> None:
    keys = np.array([[2, 1], [0, 5], [2, 1], [0, 5], [1, 0], [2, 1]], dtype=np.int64) * spread
    found = cells_module._classes(keys)
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
