"""Tests for zarr_ndarray_dtype._grid: boxes agree with numpy's indexing, slabs tile the box."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_dtype._grid import Box, Grid, resolve, slabs, untile, whole_chunks


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


@given(_case(), st.integers(1, 40), st.integers(1, 3), st.integers(1, 4))
def test_box_matches_numpy_and_slabs_tile_it_in_order(
    case: tuple[tuple[int, ...], tuple[int, ...], tuple[object, ...]],
    limit: int,
    per: int,
    stretch: int,
) -> None:
    shape, chunks, selection = case
    shards = tuple(c * per for c in chunks)
    grid = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)
    box = resolve(selection, shape, "t")  # type: ignore[arg-type]
    want = grid[selection]  # type: ignore[index]
    assert box.shape == np.shape(want)
    assert grid[box.slices].reshape(-1).tolist() == np.reshape(want, -1).tolist()
    # slabs of whole chunks, one after another in C order of the box
    parts = list(slabs(box, [shards, chunks], lambda: limit, stretch))
    cells = [grid[part.slices].reshape(-1) for part in parts]
    assert (
        np.concatenate([*cells, np.zeros(0, np.intp)]).tolist()
        == grid[box.slices].reshape(-1).tolist()
    )
    for i, part in enumerate(parts[:-1]):  # cuts on chunk boundaries; a shard's if a row fits
        axis = next(a for a, (x, y) in enumerate(zip(part.stops, box.stops, strict=True)) if x != y)
        assert part.stops[axis] % chunks[axis] == 0
        across = int(np.prod(box.extents)) // box.extents[axis]
        fits = limit * stretch if i == 0 and across > 1 else limit
        if across * shards[axis] <= fits:
            assert part.stops[axis] % shards[axis] == 0
        # no bigger than the limit, or one row of the unit it ends on (the first: a shard row)
        cells = int(np.prod(part.extents))
        unit = shards[axis] if across * shards[axis] <= fits else chunks[axis]
        assert cells <= max(limit, across * unit), (cells, limit, unit)


def test_grid() -> None:
    grid = Grid((5, 3), (2, 2))
    assert grid.grid_shape == (3, 2) and grid.nchunks == 6 and grid.ncells == 15
    assert grid.region((2, 1)) == (slice(4, 5), slice(2, 3))
    assert grid.padded() == Grid((6, 4), (2, 2))
    assert list(grid.indices())[:3] == [(0, 0), (0, 1), (1, 0)]
    assert list(Grid((), ()).indices()) == [()]


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


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=0, max_size=3))
def test_untile_lays_tiles_out_as_numpy_cuts_them(axes: list[tuple[int, int]]) -> None:
    tiles, tile = tuple(n for n, _ in axes), tuple(t for _, t in axes)
    whole = np.arange(int(np.prod(tiles + tile, dtype=np.int64))).reshape(
        tuple(n * t for n, t in axes)
    )
    cut = np.empty(tiles + tile, dtype=whole.dtype)
    for index in np.ndindex(*tiles):
        box = [slice(i * t, (i + 1) * t) for i, t in zip(index, tile, strict=True)]
        cut[index] = whole[tuple(box)]
    assert np.array_equal(untile(cut), whole)


def test_whole_chunks_end_on_chunk_boundaries_or_the_arrays_edge() -> None:
    shape, chunks = (10, 7), (4, 3)
    assert whole_chunks(Box((0, 0), (10, 7), ()), chunks, shape)  # edge chunks clipped
    assert whole_chunks(Box((4, 3), (8, 6), ()), chunks, shape)
    assert not whole_chunks(Box((4, 3), (8, 5), ()), chunks, shape)  # cuts a chunk
    assert not whole_chunks(Box((2, 0), (4, 3), ()), chunks, shape)  # starts inside one
