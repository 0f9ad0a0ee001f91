"""Tests for zarr_ndarray_dtype._grid: boxes agree with numpy's indexing, slabs tile the box."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_dtype._grid import cell_at, morton, origins, project, resolve, slabs


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


@given(_case(), st.data())
def test_chunks_project_their_cells_into_a_box_as_numpy_indexes(
    case: tuple[tuple[int, ...], tuple[int, ...], tuple[object, ...]], data: st.DataObject
) -> None:
    """Every chunk a box touches (:func:`origins`) puts its cells where numpy's indexing puts
    them: the box's cells in C order, laid out by :func:`project` chunk by chunk."""
    shape, chunks, selection = case
    box = resolve(selection, shape, "read")
    whole = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    got = np.full(int(np.prod(box.extents, dtype=np.int64)), -1)
    padded = tuple(-(-n // c) * c for n, c in zip(shape, chunks, strict=True))
    grid = np.full(padded, -2)
    grid[tuple(slice(0, n) for n in shape)] = whole
    for origin in origins(box, chunks):
        places = project(origin, chunks, box)
        assert places is not None
        local, pos = places
        chunk = grid[tuple(slice(o, o + c) for o, c in zip(origin, chunks, strict=True))]
        got[pos] = chunk.reshape(-1)[local]
    assert np.array_equal(got, whole[box.slices].reshape(-1))
    if got.size:
        at = data.draw(st.integers(0, got.size - 1))
        assert whole[cell_at(box, at)] == got[at]


@pytest.mark.parametrize("shape", [(1,), (5,), (4, 4), (3, 5), (2, 3, 7), (8, 1, 3)])
def test_morton_is_zarrs_order(shape: tuple[int, ...]) -> None:
    """zarr's own order of a shard's inner chunks (a private function: the test checks our
    copy of the rule against it)."""
    import zarr.core.indexing as indexing

    zarrs = getattr(indexing, "morton_order_coords", None) or indexing.morton_order_iter
    assert morton(shape) == [tuple(c) for c in zarrs(shape)]
