"""Tests for zarr_ndarray_dtype.grid: boxes agree with numpy's indexing, pieces tile the box."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_dtype.grid import chunk_boxes, grid_indices, resolve


@st.composite
def _case(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[object, ...]]:
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 7), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, 4)) for _ in shape)
    items: list[object] = []
    for n in shape:
        if n and draw(st.booleans()):
            items.append(draw(st.integers(-n, n - 1)))
        else:
            a = draw(st.none() | st.integers(-n - 2, n + 2))
            b = draw(st.none() | st.integers(-n - 2, n + 2))
            items.append(slice(a, b))
    if items and draw(st.booleans()):
        cut = draw(st.integers(0, len(items) - 1))
        items[cut:] = [Ellipsis]
    return shape, chunks, tuple(items)


@given(_case())
def test_box_matches_numpy_and_pieces_tile_it(
    case: tuple[tuple[int, ...], tuple[int, ...], tuple[object, ...]],
) -> None:
    shape, chunks, selection = case
    grid = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)
    box = resolve(selection, shape, "t")  # type: ignore[arg-type]
    want = grid[selection]  # type: ignore[index]
    assert box.shape == np.shape(want)
    assert grid[box.slices].reshape(-1).tolist() == np.reshape(want, -1).tolist()
    # every cell of the box lands once, from the right chunk, at its C-order position
    out = np.full(box.extents, -1, dtype=np.intp).reshape(-1)
    for piece in chunk_boxes(chunks, box):
        first = [c * k for c, k in zip(piece.coords, chunks, strict=True)]
        inner = tuple(min(k, n - f) for k, n, f in zip(chunks, shape, first, strict=True))
        chunk = grid[tuple(slice(f, f + k) for f, k in zip(first, inner, strict=True))]
        padded = np.full(chunks, -2, dtype=np.intp)
        padded[tuple(slice(0, k) for k in inner)] = chunk
        pos = grid_indices(piece.at, piece.extents, box.extents)
        assert (out[pos] == -1).all()
        out[pos] = padded.reshape(-1)[grid_indices(piece.lo, piece.extents, chunks)]
    assert out.tolist() == grid[box.slices].reshape(-1).tolist()


def test_grid_indices_is_ravel_multi_index() -> None:
    got = grid_indices((1, 0, 2), (2, 3, 1), (4, 3, 5))
    lo = np.indices((2, 3, 1)).reshape(3, -1) + np.array([[1], [0], [2]])
    assert got.tolist() == np.ravel_multi_index(tuple(lo), (4, 3, 5)).tolist()
    assert grid_indices((), (), ()).tolist() == [0]


@pytest.mark.parametrize(
    ("selection", "error", "phrase"),
    [
        ((0, 0, 0), IndexError, "2 dimensions, got a selection of 3"),
        ((..., ...), IndexError, "only one '...'"),
        ((5, 0), IndexError, "out of bounds for axis 0 of size 3"),
        ((slice(None, None, 2),), ValueError, "step 2 on axis 0"),
        (([0],), TypeError, "got list"),
        ((True,), TypeError, "got bool"),
    ],
)
def test_bad_selections(selection: object, error: type[Exception], phrase: str) -> None:
    with pytest.raises(error, match=phrase) as info:
        resolve(selection, (3, 4), "read_columnar")  # type: ignore[arg-type]
    assert str(info.value).startswith("read_columnar: ")


def test_empty_box_has_no_pieces() -> None:
    assert chunk_boxes((2, 2), resolve((slice(1, 1), 0), (3, 3), "t")) == []
