"""Cutting decoded values into per-cell read-only views: the one cell cutter of both codecs.

Making one ndarray per cell is most of an object-array decode's time, so the cutter avoids
per-cell reshapes: it builds one read-only strided window per class of cells (cells of one
leading extent, one shape, or one trailing shape) and takes every cell from its window with an
integer index or a step slice, in cell order, the per-cell loop running in C (``map`` into
``np.fromiter``) or in a comprehension. Small blocks, and blocks whose classes are too many to
pay for their windows, get one slice per cell. Every cell is a C-contiguous read-only view of
the decoded values. Timings of the strategies are printed by ``benchmarks/bench_ragged.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise
from operator import getitem
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import as_strided

from zarr_ndarray_dtype.pattern import ShapePattern

__all__ = ["cut_cells", "readonly_cells"]

# operator.getitem, typed for what it does here (its stub's overloads confuse ``map``).
_subscript = cast("Callable[[np.ndarray, Any], np.ndarray]", getitem)

# Below these, windows do not pay.
_MIN_CELLS = 20_000  # rows cutter: cells of a block
_MIN_CELLS_PER_GROUP = 64  # rows cutter: cells per leading extent
_MIN_CELLS_TO_GROUP = 1_000  # shape cutter: cells of a block
_MIN_CELLS_PER_SHAPE = 24
_MIN_CELLS_PER_ROW_SHAPE = 8
# Keys up to this many times the cell count index a lookup table directly (no sort).
_DENSE_KEYS_PER_CELL = 4


def cut_cells(
    values: np.ndarray,
    offsets: npt.NDArray[np.int64],
    shapes: npt.NDArray[np.int64] | None,
    pattern: ShapePattern,
) -> np.ndarray:
    """1-D object array of read-only views: cell ``i`` is ``values[offsets[i]:offsets[i + 1]]``
    (flat values, item offsets) in its shape (``shapes[i]``, or the one its size gives).

    ``values`` is made read-only, once for every view.
    """
    values.flags.writeable = False
    if pattern.is_leading_variable:
        block = values.reshape(-1, *pattern.dims[1:])
        return readonly_cells(block, offsets // pattern.fixed_items)
    if shapes is None:
        shapes = pattern.shapes_for_items(np.diff(offsets))
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


def readonly_cells(block: np.ndarray, offsets: npt.NDArray[np.int64]) -> np.ndarray:
    """Object array of read-only views ``block[offsets[i]:offsets[i + 1]]`` (``n + 1`` offsets).

    ``block`` has shape ``(total, d1, ..., dk)``; it is made read-only (once, for every view).
    """
    block.flags.writeable = False
    n = offsets.size - 1
    if n < _MIN_CELLS:
        return _rows_sliced(block, offsets)
    rows = np.diff(offsets)
    top = int(rows.max())
    if top <= _DENSE_KEYS_PER_CELL * n:  # windows indexed by the extent itself: no sort
        extents = np.flatnonzero(np.bincount(rows, minlength=top + 1))
        ids = rows
        slots = extents.tolist()
    else:  # windows indexed by the extent's rank
        extents, ids = np.unique(rows, return_inverse=True)
        slots = list(range(extents.size))
    if extents.size > n // _MIN_CELLS_PER_GROUP:
        return _rows_sliced(block, offsets)
    total, step = block.shape[0], block.strides[0]
    windows = np.empty(slots[-1] + 1, dtype=object)  # slots of absent extents stay None
    for slot, r in zip(slots, extents.tolist(), strict=True):
        windows[slot] = as_strided(
            block,
            shape=(total - r + 1, r, *block.shape[1:]),
            strides=(step, *block.strides),
            writeable=False,
        )
    # offsets has one entry more than there are cells: map stops at the last cell.
    picked = map(_subscript, windows[ids.reshape(-1)].tolist(), offsets.tolist())
    return np.fromiter(picked, dtype=object, count=n)


def _rows_sliced(block: np.ndarray, offsets: npt.NDArray[np.int64]) -> np.ndarray:
    # A comprehension's ``block[a:b]`` reuses one cached slice object (``map(slice, ...)`` does
    # not).
    cells = [block[a:b] for a, b in pairwise(offsets.tolist())]
    return np.fromiter(cells, dtype=object, count=len(cells))


def _classes(
    columns: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]] | None:
    """``(ids, rows)``: ``rows`` are the distinct rows of ``columns``, ``rows[ids[i]]`` is row
    ``i``; None when the rows do not pack into one int64 key (huge extents)."""
    count, width = columns.shape
    low = [int(np.min(columns[:, c])) for c in range(width)]
    radix = [int(np.max(columns[:, c])) + 1 - low[c] for c in range(width)]
    size = math.prod(radix)
    if size >= 2**62:
        return None
    key = np.zeros(count, dtype=np.int64)
    for c in range(width):
        key *= radix[c]
        key += columns[:, c] - low[c]
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
    for c in range(width - 1, -1, -1):
        rest, digit = np.divmod(rest, radix[c])
        rows[:, c] = digit + low[c]
    return ids, rows


def _window(values: np.ndarray, shape: list[int]) -> np.ndarray:
    """A read-only view whose ``window[k]`` is the C-order cell of ``shape`` at item ``k``."""
    item = values.itemsize
    strides = [item] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    rows = values.size - math.prod(shape) + 1
    return np.ndarray((rows, *shape), values.dtype, values, 0, (item, *strides))


def _table(windows: list[np.ndarray]) -> np.ndarray:
    """The windows as a 1-D object array, so ``table[ids]`` picks every cell's window in C."""
    table = np.empty(len(windows), dtype=object)
    for slot, window in enumerate(windows):
        table[slot] = window
    return table


def _sliced(
    values: np.ndarray, shapes: npt.NDArray[np.int64], starts: list[int], stops: list[int]
) -> np.ndarray:
    pieces = [
        values[a:b].reshape(shape)
        for a, b, shape in zip(starts, stops, shapes.tolist(), strict=True)
    ]
    return np.fromiter(pieces, dtype=object, count=len(pieces))


def _by_shape(
    values: np.ndarray, bounds: list[int], ids: npt.NDArray[np.intp], rows: npt.NDArray[np.int64]
) -> np.ndarray:
    """Cell ``i`` is ``windows[ids[i]][bounds[i]]``: one window per distinct shape."""
    windows = _table([_window(values, row) for row in rows.tolist()])
    pick = map(_subscript, windows[ids].tolist(), bounds)
    return np.fromiter(pick, dtype=object, count=ids.size)


def _by_rows(
    values: np.ndarray,
    shapes: npt.NDArray[np.int64],
    bounds: list[int],
    ids: npt.NDArray[np.intp],
    rows: npt.NDArray[np.int64],
) -> np.ndarray:
    """Cell ``i`` is ``windows[ids[i]][a:b:step]``: one window per distinct trailing shape,
    ``step`` its item count; cells of a trailing shape with no items (or more than ``values``
    holds: only empty cells have it) are sliced instead."""
    size = values.size
    trailing = rows.tolist()
    steps = [math.prod(row) for row in trailing]
    empty = [not 0 < step <= size for step in steps]
    windows = _table(
        [values[:0] if bad else _window(values, r) for r, bad in zip(trailing, empty, strict=True)]
    )
    cell_steps = np.array([1 if bad else s for s, bad in zip(steps, empty, strict=True)])[ids]
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
