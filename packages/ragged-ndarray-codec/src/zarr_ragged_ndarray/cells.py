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
from collections.abc import Callable
from itertools import chain
from operator import attrgetter, getitem
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import CellError, NDArray, readonly_cells, unbox

__all__ = ["cut_cells", "fill_cell", "full_shapes", "gather_cells", "variable_extents"]

_ndim = attrgetter("ndim")
_shape = attrgetter("shape")
# operator.getitem, typed for what it does here (its stub's overloads confuse ``map``).
_subscript = cast("Callable[[np.ndarray, int], np.ndarray]", getitem)


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


# Below these, windows do not pay. Measured on 10,000-cell float32 chunks: a window costs ~1.6 us;
# an integer index into a whole-shape window saves ~80 ns per cell over a step slice of a
# trailing-shape window, which saves ~250 ns per cell over slice-and-reshape.
_MIN_CELLS_TO_GROUP = 1_000
_MIN_CELLS_PER_SHAPE = 24
_MIN_CELLS_PER_ROW_SHAPE = 8
# Class keys up to this many times the cell count are classified with a lookup table, not a sort.
_DENSE_KEYS_PER_CELL = 4


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
    strategy that fits, each building one read-only strided window of ``values`` per class of
    cells and then making the cells in cell order (so they are laid out in memory in the order
    they are read and freed):

    1. shapes repeat (>= ``_MIN_CELLS_PER_SHAPE`` cells per distinct shape): ``window[s]`` is
       the cell of that shape starting at item ``s``, one integer index per cell (numpy's
       cheapest way to make a subarray view);
    2. trailing shapes ``shape[1:]`` repeat (>= ``_MIN_CELLS_PER_ROW_SHAPE`` per distinct one):
       a cell of shape ``(h, *t)`` starting at item ``s`` is the step slice
       ``window[s:s + h * prod(t):prod(t)]`` of the window of ``t``, no reshape;
    3. otherwise every cell is a slice of ``values``, reshaped.

    Measured on 10,000 ``(h, w)`` float32 cells, h and w uniform in 1..64 (strategy 2), CPU time
    of making and then freeing the cells on a loaded 2-core VM, best of 21: ~325 ns per cell,
    against ~525 ns when the cells were made class by class (sorted by shape, then put back in
    cell order: faster to make than slices but freed in scattered memory order) and ~540 ns for
    slice-and-reshape (strategy 3).
    """
    pattern = dtype.pattern
    if pattern.is_leading_variable:  # rows of the fixed trailing shape: the shared cutter
        trailing = pattern.empty_shape[1:]
        block = values.reshape(-1, *trailing)
        return readonly_cells(block, offsets // pattern.fixed_items)
    values.flags.writeable = False
    count = offsets.size - 1
    bounds = offsets.tolist()
    if count >= _MIN_CELLS_TO_GROUP and values.size:
        whole = _classes(shapes)
        if whole is not None and count >= len(whole[1]) * _MIN_CELLS_PER_SHAPE:
            return _by_shape(values, bounds, *whole)
        rows = _classes(shapes[:, 1:])
        if rows is not None and count >= len(rows[1]) * _MIN_CELLS_PER_ROW_SHAPE:
            return _by_rows(values, shapes, bounds, *rows)
    return _sliced(values, shapes, bounds[:-1], bounds[1:])


def _classes(
    columns: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]] | None:
    """``(ids, rows)``: ``rows`` are the distinct rows of ``columns``, ``rows[ids[i]]`` is row
    ``i``; ``None`` when the rows do not pack into one int64 key (huge extents: slice instead).

    Each row packs into one key, digit by digit (a digit per column, ``max - min + 1`` values).
    Keys within ``_DENSE_KEYS_PER_CELL`` times the row count are classified through a lookup
    table, with no sort; wider keys with ``np.unique``.
    """
    count, width = columns.shape
    # Column by column: a reduction over axis 0 of a narrow 2-D array is ~10x slower.
    low = [int(np.min(columns[:, column])) for column in range(width)]
    radix = [int(np.max(columns[:, column])) + 1 - low[column] for column in range(width)]
    size = math.prod(radix)
    if size >= 2**62:
        return None
    key = np.zeros(count, dtype=np.int64)
    for column in range(width):
        key *= radix[column]
        key += columns[:, column] - low[column]
    if size <= _DENSE_KEYS_PER_CELL * count:
        table = np.zeros(size, dtype=np.intp)
        table[key] = 1
        distinct = np.flatnonzero(table)
        table[distinct] = np.arange(distinct.size)
        ids = table[key]
    else:
        distinct, ids = np.unique(key, return_inverse=True)
        ids = ids.reshape(-1)
    rows = np.empty((distinct.size, width), dtype=np.int64)
    rest = distinct.astype(np.int64)
    for column in range(width - 1, -1, -1):
        rest, digit = np.divmod(rest, radix[column])
        rows[:, column] = digit + low[column]
    return ids, rows


def _c_strides(shape: list[int], item: int) -> list[int]:
    strides = [item] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return strides


def _window(values: np.ndarray, shape: list[int]) -> np.ndarray:
    """A view of ``values`` whose ``window[k]`` is the C-order cell of ``shape`` at item ``k``.

    ``shape`` holds at least one and at most ``values.size`` items. A view of the read-only
    ``values``: read-only too.
    """
    item = values.itemsize
    rows = values.size - math.prod(shape) + 1
    return np.ndarray((rows, *shape), values.dtype, values, 0, (item, *_c_strides(shape, item)))


def _table(windows: list[np.ndarray]) -> np.ndarray:
    """The windows as a 1-D object array, so ``table[ids]`` picks every cell's window in C."""
    table = np.empty(len(windows), dtype=object)
    for slot, window in enumerate(windows):
        table[slot] = window
    return table


def _sliced(
    values: np.ndarray, shapes: npt.NDArray[np.int64], starts: list[int], stops: list[int]
) -> np.ndarray:
    """Cells of ``shapes`` at items ``starts[i]:stops[i]``: slices of ``values``, reshaped."""
    pieces = [
        values[a:b].reshape(shape)
        for a, b, shape in zip(starts, stops, shapes.tolist(), strict=True)
    ]
    return np.fromiter(pieces, dtype=object, count=len(pieces))


def _by_shape(
    values: np.ndarray, bounds: list[int], ids: npt.NDArray[np.intp], rows: npt.NDArray[np.int64]
) -> np.ndarray:
    """Cell ``i`` is ``windows[ids[i]][bounds[i]]``: one window per distinct shape ``rows``."""
    windows = _table([_window(values, row) for row in rows.tolist()])  # each fits (checked)
    # bounds has one entry more than there are cells: map stops at the last cell.
    pick = map(_subscript, windows[ids].tolist(), bounds)
    return np.fromiter(pick, dtype=object, count=ids.size)


def _by_rows(
    values: np.ndarray,
    shapes: npt.NDArray[np.int64],
    bounds: list[int],
    ids: npt.NDArray[np.intp],
    rows: npt.NDArray[np.int64],
) -> np.ndarray:
    """Cell ``i`` is ``windows[ids[i]][a:b:step]`` (``a, b = bounds[i:i + 2]``): one window per
    distinct trailing shape ``rows``, ``step`` its item count.

    A trailing shape with no items, or more than ``values`` holds, has only empty cells (the
    layout checked every cell's items): those cells are sliced and reshaped instead.
    """
    size = values.size
    trailing = rows.tolist()
    steps = [math.prod(row) for row in trailing]
    empty = [not 0 < step <= size for step in steps]
    windows = _table(
        [
            values[:0] if bad else _window(values, row)
            for row, bad in zip(trailing, empty, strict=True)
        ]
    )
    cell_steps = np.array([1 if bad else step for step, bad in zip(steps, empty, strict=True)])[ids]
    # A comprehension's ``a:b:step`` reuses the interpreter's cached slice object; building the
    # slices with ``map(slice, ...)`` goes through the type call (measured ~90 ns more per cell).
    # bounds has one entry more than there are cells: zip stops at the last cell.
    pieces = [
        window[a:b:step]
        for window, a, b, step in zip(
            windows[ids].tolist(), bounds, bounds[1:], cell_steps.tolist(), strict=False
        )
    ]
    cells = np.fromiter(pieces, dtype=object, count=len(pieces))
    if any(empty):
        where = np.flatnonzero(np.array(empty)[ids])
        starts = [bounds[i] for i in where.tolist()]
        cells[where] = _sliced(values, shapes[where], starts, starts)
    return cells
