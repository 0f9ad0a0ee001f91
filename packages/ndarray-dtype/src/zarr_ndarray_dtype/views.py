"""Cutting one decoded block into per-cell read-only views: the one place decoders make cells.

Creating one ndarray object per cell is unavoidable for an object-array result, and it is most
of a decode's time. Two strategies, chosen per block:

* one slice per cell, ``block[a:b]``;
* for large blocks with few distinct leading extents: one read-only strided window
  ``win[k] == block[k:k + r]`` per extent ``r``, and every cell taken as ``windows[r][start]``
  (an integer index is numpy's cheapest way to make a view at a chosen position), the windows
  found through a table indexed by the extent (no sort).

Either way each cell is a C-contiguous, read-only view of the one block, made in cell order (so
the views lie in memory in the order they are read and freed), with the per-cell loop in C
(each cell's window picked with one ``windows[ids]``, then ``map`` feeding ``np.fromiter``) or
in a list comprehension whose ``block[a:b]`` reuses the interpreter's cached slice object.

Measured on 100,000 (n, 2) float32 cells, n ~ Poisson(8), on a loaded 2-core VM, CPU time of
making and then freeing the cells, best of 15: grouped windows ~230 ns per cell (~186 to make,
~44 to free), one slice per cell ~300 ns; the earlier version, which made the cells group by
group (sorted by extent, then put back in cell order), ~265 ns (~200 to make, ~63 to free, the
views lying scattered in memory). For comparison, ``block[i]`` (one row view per cell) costs
~190 ns and iterating the block's rows, the cheapest view numpy makes at all, ~135 ns: that
floor is numpy's view constructor and destructor, which every decode returning ndarray cells
pays; the grouped windows add ~95 ns for the index, the window pick and the offsets (a compiled
loop calling numpy's ``PyArray_NewFromDescr`` per cell, tried outside this package, reaches the
floor, ~135 ns; it would need a compiling build backend and numpy headers at build time). Slower
alternatives measured: ``np.split`` ~900 ns, ``np.ndarray(shape, dtype, buffer, offset)`` per
cell ~1 us, ``np.frombuffer(...).reshape`` per cell ~1.2 us, slices built by
``map(slice, a, b)`` (through the type call) ~10% over the cached ones, and picking views by
iterating a window after ``__setstate__`` of its iterator (as slow as an integer index).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from operator import getitem
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import as_strided

__all__ = ["readonly_cells"]

# operator.getitem, typed for what it does here (its stub's overloads confuse ``map``).
_subscript = cast("Callable[[np.ndarray, Any], np.ndarray]", getitem)

# Below these, grouping does not pay (measured: equal at 10,000 cells of ~50 extents).
_MIN_CELLS = 20_000
_MIN_CELLS_PER_GROUP = 64
# Extents up to this many times the cell count index a table of windows directly (no sort).
_DENSE_EXTENTS_PER_CELL = 4


def readonly_cells(block: np.ndarray, offsets: npt.NDArray[np.int64]) -> np.ndarray:
    """Object array of read-only views ``block[offsets[i]:offsets[i + 1]]`` (``n + 1`` offsets).

    ``block`` has shape ``(total, d1, ..., dk)``; it is made read-only (once, for every view).
    """
    block.flags.writeable = False
    n = offsets.size - 1
    if n < _MIN_CELLS:
        return _sliced(block, offsets)
    rows = np.diff(offsets)
    top = int(rows.max())
    if top <= _DENSE_EXTENTS_PER_CELL * n:  # windows indexed by the extent itself: no sort
        extents = np.flatnonzero(np.bincount(rows, minlength=top + 1))
        ids = rows
        slots = extents.tolist()
    else:  # windows indexed by the extent's rank
        extents, ids = np.unique(rows, return_inverse=True)
        slots = list(range(extents.size))
    if extents.size > n // _MIN_CELLS_PER_GROUP:
        return _sliced(block, offsets)
    total = block.shape[0]
    step = block.strides[0]
    windows = np.empty(slots[-1] + 1, dtype=object)  # slots of absent extents stay None
    for slot, r in zip(slots, extents.tolist(), strict=True):
        windows[slot] = as_strided(
            block,
            shape=(total - r + 1, r, *block.shape[1:]),
            strides=(step, *block.strides),
            writeable=False,
        )
    # Each cell's window picked in C (``windows[ids]``), then one integer index per cell.
    # offsets has one entry more than there are cells: map stops at the last cell.
    picked = map(_subscript, windows[ids.reshape(-1)].tolist(), offsets.tolist())
    return np.fromiter(picked, dtype=object, count=n)


def _sliced(block: np.ndarray, offsets: npt.NDArray[np.int64]) -> np.ndarray:
    # A comprehension's ``block[a:b]`` reuses one cached slice object; ``map(slice, ...)`` would
    # build each through the type call (measured ~10% slower per view).
    bounds = offsets.tolist()
    cells = [block[a:b] for a, b in pairwise(bounds)]
    return np.fromiter(cells, dtype=object, count=len(cells))
