"""Cutting one decoded block into per-cell read-only views, as fast as numpy allows.

Creating one ndarray object per cell is unavoidable for an object-array result, and it is most
of a decode's time. ``block[a:b]`` costs a slice object plus numpy's general index parsing per
cell; indexing a 3-D array with a plain integer is numpy's cheapest way to make a subarray view.
So cells are grouped by their leading extent ``r``: for each distinct ``r`` a read-only strided
window ``win[k] == block[k:k + r]`` is built once and every cell of that extent is ``win[start]``.
When a chunk has many distinct extents (few cells per group) or few cells, the per-group setup
would dominate and :func:`zarr_ndarray_dtype.readonly_cells` (one slice per cell) is used.
Either way each cell is a C-contiguous, read-only view of the one block.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import as_strided

from zarr_ndarray_dtype import readonly_cells

__all__ = ["cell_views"]

# Below these, grouping does not pay (measured: equal at 10,000 cells of ~50 extents).
_MIN_CELLS = 20_000
_MIN_CELLS_PER_GROUP = 64


def cell_views(block: np.ndarray, offsets: npt.NDArray[np.int64]) -> np.ndarray:
    """Object array of read-only views ``block[offsets[i]:offsets[i + 1]]`` (``n + 1`` offsets).

    ``block`` has shape ``(total, d1, ..., dk)`` and is made read-only.
    """
    n = offsets.size - 1
    rows = np.diff(offsets)
    if n < _MIN_CELLS or n == 0:
        return readonly_cells(block, offsets)
    wide = bool(rows.max() >= 2**16)
    order = np.argsort(rows if wide else rows.astype(np.uint16), kind="stable")
    sorted_rows = rows[order]
    cuts = np.flatnonzero(sorted_rows[1:] != sorted_rows[:-1]) + 1
    if cuts.size + 1 > n // _MIN_CELLS_PER_GROUP:
        return readonly_cells(block, offsets)
    block.flags.writeable = False
    starts = offsets[:-1][order]
    total = block.shape[0]
    step = block.strides[0]
    grouped = np.empty(n, dtype=object)
    edges = [0, *cuts.tolist(), n]
    for a, b in pairwise(edges):
        r = int(sorted_rows[a])
        window = as_strided(
            block,
            shape=(total - r + 1, r, *block.shape[1:]),
            strides=(step, *block.strides),
            writeable=False,
        )
        grouped[a:b] = np.fromiter(
            map(window.__getitem__, starts[a:b].tolist()), dtype=object, count=b - a
        )
    cells = np.empty(n, dtype=object)
    cells[order] = grouped
    return cells
