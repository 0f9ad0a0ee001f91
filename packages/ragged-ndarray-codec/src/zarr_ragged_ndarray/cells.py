"""Cells <-> (values, shapes): gathering a chunk's cells and cutting decoded values into cells.

Pure numpy and the data type's rules; no zarr and no wire format. ``values`` is one flat,
C-contiguous array of the element dtype holding every cell's items in C order, cell after cell;
``shapes`` is the ``(count, ndim)`` int64 table of every cell's full shape.

Gathering takes the common case, every cell already an ndarray of the element dtype and rank,
with one ``np.concatenate(..., axis=None)`` plus one pass over the cells' shapes. Anything else
(``None``, lists, other dtypes, big-endian arrays, the 0-d wrappers zarr puts around scalar
writes) is converted cell by cell with the data type's lossless ``coerce_cell``; only the cells
that need it pay for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import CellError, NDArray, readonly_cells, unbox

__all__ = ["cut_cells", "fill_cell", "full_shapes", "gather_cells", "variable_extents"]

_ndim = attrgetter("ndim")
_shape = attrgetter("shape")


def fill_cell(dtype: NDArray, fill_value: Any) -> np.ndarray:
    """The fill element as a plain C-contiguous array (the empty element when there is none)."""
    cell = unbox(fill_value)
    return dtype.coerce_cell(None if cell is None else np.asarray(cell))


def variable_extents(shapes: npt.NDArray[np.int64], dtype: NDArray) -> npt.NDArray[np.int64]:
    """The ``(count, k)`` extents of the variable dimensions, in pattern order."""
    return shapes[:, list(dtype.pattern.variable_axes)]


def full_shapes(extents: npt.NDArray[np.int64], dtype: NDArray) -> npt.NDArray[np.int64]:
    """The ``(count, ndim)`` full shapes from the variable extents and the pattern's fixed ones."""
    pattern = dtype.pattern
    shapes = np.empty((extents.shape[0], pattern.ndim), dtype=np.int64)
    shapes[:, list(pattern.variable_axes)] = extents
    for axis, extent in enumerate(pattern.dims):
        if extent is not None:
            shapes[:, axis] = extent
    return shapes


def gather_cells(
    cells: list[Any], dtype: NDArray, fill: np.ndarray | None = None
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Concatenate ``cells`` (in order) into ``(values, shapes)``.

    ``values`` is flat, C-contiguous, of the element dtype (little-endian; bools stored 0/1);
    ``shapes[i]`` is the shape of cell ``i``. ``None`` stands for ``fill`` (default: the empty
    element). The cells are never modified. Raises the data type's ``CellError`` /
    ``CellTypeError`` for a cell that does not fit the pattern or cannot be converted losslessly.
    """
    item = dtype.item_dtype
    ndim = dtype.pattern.ndim
    count = len(cells)
    if not count:
        return np.empty(0, dtype=item), np.zeros((0, ndim), dtype=np.int64)
    found = _exact(cells, item, ndim)
    if found is None:
        cells = [_conform(c, dtype, item, ndim, fill) for c in cells]
        found = _exact(cells, item, ndim)
        if found is None:  # every cell was just conformed: cannot happen
            raise AssertionError("conformed cells did not concatenate")
    values, shapes = found
    _check_fixed(cells, shapes, dtype)
    if item.kind == "b":
        raw = values.view(np.uint8)
        if raw.size and int(np.max(raw)) > 1:  # a bool view of arbitrary bytes: store 0/1
            values = raw != 0
    return values, shapes


def _exact(
    cells: list[Any], item: np.dtype[Any], ndim: int
) -> tuple[np.ndarray, npt.NDArray[np.int64]] | None:
    """``(values, shapes)`` when every cell is an array of exactly ``item`` and rank ``ndim``."""
    try:
        ranks = np.fromiter(map(_ndim, cells), dtype=np.int64, count=len(cells))
        if ranks.size and (int(np.min(ranks)) != ndim or int(np.max(ranks)) != ndim):
            return None
        values = np.concatenate(cells, axis=None, dtype=item, casting="no")
    except (AttributeError, ValueError, TypeError):
        return None
    shapes = np.fromiter(
        chain.from_iterable(map(_shape, cells)), dtype=np.int64, count=len(cells) * ndim
    ).reshape(len(cells), ndim)
    values = np.asarray(values)  # a fill cell (ndarray subclass) must not make values one
    if int(np.prod(shapes, axis=1).sum()) != values.size:  # objects whose shape lies
        return None
    return values, shapes


def _conform(
    cell: Any, dtype: NDArray, item: np.dtype[Any], ndim: int, fill: np.ndarray | None
) -> Any:
    """``cell`` itself if it is already an exact array of the pattern, else its coerced form."""
    if (
        type(cell) is np.ndarray
        and cell.dtype == item
        and cell.ndim == ndim
        and dtype.pattern.matches(cell.shape)
    ):
        return cell
    if unbox(cell) is None:
        return fill if fill is not None else dtype.coerce_cell(None)
    return dtype.coerce_cell(cell)


def _check_fixed(cells: list[Any], shapes: npt.NDArray[np.int64], dtype: NDArray) -> None:
    """Every cell's fixed extents equal the pattern's (one vectorized comparison)."""
    fixed = [(axis, d) for axis, d in enumerate(dtype.pattern.dims) if d is not None]
    if not fixed:
        return
    axes = [axis for axis, _ in fixed]
    wrong = (shapes[:, axes] != np.array([d for _, d in fixed], dtype=np.int64)).any(axis=1)
    if wrong.any():
        bad = int(np.argmax(wrong))
        dtype.coerce_cell(cells[bad])  # raises the data type's CellError naming the pattern
        raise CellError(
            f"cell {bad} of shape {tuple(shapes[bad].tolist())} does not match pattern "
            f"{dtype.pattern}; reshape the cell."
        )


# Below these, grouping cells does not pay (a window costs a few microseconds).
_MIN_CELLS_TO_GROUP = 1_000
_MIN_CELLS_PER_SHAPE = 16
_MIN_CELLS_PER_ROW_SHAPE = 4


def cut_cells(
    values: np.ndarray,
    shapes: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    dtype: NDArray,
) -> np.ndarray:
    """1-D object array of read-only views: cell ``i`` is ``values[offsets[i]:offsets[i + 1]]``
    reshaped to ``shapes[i]``. ``values`` (flat, element dtype) is made read-only.

    Leading-variable patterns use the data type's shared cutter (rows of the fixed trailing
    shape). Other patterns, for chunks of at least ``_MIN_CELLS_TO_GROUP`` cells, pick the first
    strategy that fits, each building one read-only strided window of ``values`` per group:

    1. shapes repeat (>= ``_MIN_CELLS_PER_SHAPE`` cells per distinct shape): ``window[k]`` is
       the cell of that shape starting at item ``k``, one integer index per cell (numpy's
       cheapest way to make a subarray view);
    2. trailing shapes ``shape[1:]`` repeat: a cell is a step slice ``window[s:e:prod(t)]`` of
       the window of its trailing shape ``t``, one ``__getitem__`` per cell and no reshape
       (measured ~2x faster than slice-and-reshape on 10,000 (h, w) cells, h, w in 1..64);
    3. otherwise every cell is a slice of ``values``, reshaped.
    """
    pattern = dtype.pattern
    if pattern.is_leading_variable:  # rows of the fixed trailing shape: the shared cutter
        trailing = pattern.empty_shape[1:]
        block = values.reshape(-1, *trailing)
        return readonly_cells(block, offsets // pattern.fixed_items)
    values.flags.writeable = False
    count = offsets.size - 1
    if count >= _MIN_CELLS_TO_GROUP and values.size:
        # One sort serves both strategies: by trailing shape first, then by leading extent.
        order, ranked = _sorted(np.concatenate([shapes[:, 1:], shapes[:, :1]], axis=1))
        by_shape = _bounds(ranked)
        if count >= (len(by_shape) - 1) * _MIN_CELLS_PER_SHAPE:
            return _windowed(values, shapes, offsets, order, by_shape, whole=True)
        by_trailing = _bounds(ranked[:, :-1])
        if count >= (len(by_trailing) - 1) * _MIN_CELLS_PER_ROW_SHAPE:
            return _windowed(values, shapes, offsets, order, by_trailing, whole=False)
    bounds = offsets.tolist()
    pieces = map(values.__getitem__, map(slice, bounds, bounds[1:]))
    return np.fromiter(
        map(np.ndarray.reshape, pieces, map(tuple, shapes.tolist())), dtype=object, count=count
    )


def _sorted(keys: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
    """``(order, keys[order])`` with the rows of ``keys`` sorted lexicographically."""
    count, width = keys.shape
    base = int(np.max(keys)) + 1 if count else 1
    if base**width < 2**62:  # one int64 key per row: one argsort instead of a lexsort
        key = keys[:, 0].copy()
        for column in range(1, width):
            key *= base
            key += keys[:, column]
        order = np.argsort(key)  # any order within a run will do
    else:
        order = np.lexsort(keys.T[::-1])
    return order, keys[order]


def _bounds(ranked: npt.NDArray[np.int64]) -> list[int]:
    """Where runs of equal rows of the sorted ``ranked`` start, plus its length."""
    cuts = np.flatnonzero((ranked[1:] != ranked[:-1]).any(axis=1)) + 1
    return [0, *cuts.tolist(), ranked.shape[0]]


def _c_strides(shape: list[int], item: int) -> list[int]:
    strides = [item] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return strides


def _window(values: np.ndarray, shape: list[int]) -> np.ndarray:
    """A view of ``values`` whose ``window[k]`` is the C-order cell of ``shape`` at item ``k``.

    A view of the read-only ``values``: read-only too.
    """
    item = values.itemsize
    rows = max(values.size - math.prod(shape) + 1, 0)
    return np.ndarray((rows, *shape), values.dtype, values, 0, (item, *_c_strides(shape, item)))


def _runs(order: npt.NDArray[np.intp], bounds: list[int]) -> Iterator[tuple[int, int, int]]:
    """``(a, b, first)`` per run: sorted positions ``a:b`` and the cell index of its first cell."""
    return zip(bounds, bounds[1:], order[bounds[:-1]].tolist(), strict=False)


def _unsort(out: np.ndarray, order: npt.NDArray[np.intp]) -> np.ndarray:
    """The cells built in sorted order ``out``, put back in cell order."""
    cells = np.empty(out.size, dtype=object)
    cells[order] = out
    return cells


def _windowed(
    values: np.ndarray,
    shapes: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    order: npt.NDArray[np.intp],
    bounds: list[int],
    *,
    whole: bool,
) -> np.ndarray:
    """Cells cut from one strided window per run (``order`` sorts the cells into runs ``bounds``).

    ``whole``: the runs have equal shapes and ``window[k]`` is the cell of that shape starting at
    item ``k``, one integer index per cell. Otherwise the runs have equal trailing shapes
    ``shape[1:]``: a cell of shape ``(h, *t)`` starting at item ``s`` is
    ``window[s : s + h * prod(t) : prod(t)]``, one ``__getitem__`` per cell and no reshape.
    """
    starts = offsets[:-1][order].tolist()
    stops = offsets[1:][order].tolist()
    out = np.empty(offsets.size - 1, dtype=object)
    for a, b, first in _runs(order, bounds):
        if whole:
            window = _window(values, shapes[first].tolist())
            out[a:b] = np.fromiter(map(window.__getitem__, starts[a:b]), dtype=object, count=b - a)
            continue
        trailing = shapes[first, 1:].tolist()
        step = math.prod(trailing)
        if step == 0:  # empty cells: no window needed
            empty = values[:0]
            out[a:b] = [empty.reshape(shape) for shape in shapes[order[a:b]].tolist()]
            continue
        window = _window(values, trailing)
        out[a:b] = np.fromiter(
            map(window.__getitem__, map(slice, starts[a:b], stops[a:b], repeat(step, b - a))),
            dtype=object,
            count=b - a,
        )
    return _unsort(out, order)
