"""Cutting one decoded block into per-cell read-only views: the one place decoders make cells.

Creating one ndarray object per cell is unavoidable for an object-array result, and it is most
of a decode's time. Two strategies, chosen per block:

* one slice per cell, ``block[a:b]``;
* for large blocks with few distinct leading extents: cells grouped by their extent ``r``, one
  read-only strided window ``win[k] == block[k:k + r]`` built per group, and every cell of that
  extent taken as ``win[start]`` (integer indexing is numpy's cheapest way to make a subarray
  view).

Either way each cell is a C-contiguous, read-only view of the one block, and the per-cell loop
runs in C: ``map(operator.getitem, repeat(base), keys)`` (``operator.getitem`` calls the
subscript slot directly, ~7% cheaper than the bound ``base.__getitem__`` wrapper) feeding
``np.fromiter``. Measured on 100,000 (n, 2) float32 cells, n ~ Poisson(8), on a loaded 2-core VM
(``benchmarks/bench_codec.py``'s chunk, alternating, best of 9): grouped windows 22.0 ms, one
slice per cell 27.5 ms, versus 20.5 ms for the cheapest view numpy makes at all (``block[i]``,
one row per cell): the remaining cost is numpy's view constructor itself (~200 ns per view).
Slower alternatives measured: ``np.split`` 98 ms, ``np.ndarray(shape, dtype, buffer, offset)``
per cell 98 ms, ``np.frombuffer(...).reshape`` per cell 121 ms.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise, repeat
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


def readonly_cells(block: np.ndarray, offsets: npt.NDArray[np.int64]) -> np.ndarray:
    """Object array of read-only views ``block[offsets[i]:offsets[i + 1]]`` (``n + 1`` offsets).

    ``block`` has shape ``(total, d1, ..., dk)``; it is made read-only (once, for every view).
    """
    block.flags.writeable = False
    n = offsets.size - 1
    if n < _MIN_CELLS or n == 0:
        return _sliced(block, offsets)
    rows = np.diff(offsets)
    wide = bool(rows.max() >= 2**16)
    order = np.argsort(rows if wide else rows.astype(np.uint16), kind="stable")
    sorted_rows = rows[order]
    cuts = np.flatnonzero(sorted_rows[1:] != sorted_rows[:-1]) + 1
    if cuts.size + 1 > n // _MIN_CELLS_PER_GROUP:
        return _sliced(block, offsets)
    starts = offsets[:-1][order]
    total = block.shape[0]
    step = block.strides[0]
    grouped = np.empty(n, dtype=object)
    for a, b in pairwise([0, *cuts.tolist(), n]):
        r = int(sorted_rows[a])
        window = as_strided(
            block,
            shape=(total - r + 1, r, *block.shape[1:]),
            strides=(step, *block.strides),
            writeable=False,
        )
        grouped[a:b] = np.fromiter(
            map(_subscript, repeat(window, b - a), starts[a:b].tolist()), dtype=object, count=b - a
        )
    cells = np.empty(n, dtype=object)
    cells[order] = grouped
    return cells


def _sliced(block: np.ndarray, offsets: npt.NDArray[np.int64]) -> np.ndarray:
    bounds = offsets.tolist()
    return np.fromiter(
        map(_subscript, repeat(block, len(bounds) - 1), map(slice, bounds, bounds[1:])),
        dtype=object,
        count=len(bounds) - 1,
    )
